package leaderelection

import (
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/hypershift-le/hypershift/support/config"
)

func TestIdentity(t *testing.T) {
	t.Run("when POD_NAME is set, it is the identity", func(t *testing.T) {
		t.Setenv(PodNameEnv, "control-plane-operator-7d9c8b6f5-x2x4z")
		if got, err := Identity(); err != nil || got != "control-plane-operator-7d9c8b6f5-x2x4z" {
			t.Fatalf("Identity() = %q, %v", got, err)
		}
	})
	t.Run("when POD_NAME is unset, two candidates on one host differ", func(t *testing.T) {
		t.Setenv(PodNameEnv, "")
		a, errA := Identity()
		b, errB := Identity()
		if errA != nil || errB != nil || a == b || !strings.Contains(a, "_") {
			t.Fatalf("Identity() = %q, %q (%v, %v)", a, b, errA, errB)
		}
	})
}

func TestNewLeaseLock(t *testing.T) {
	le := config.LeaderElection{LeaseDuration: 60 * time.Second, RenewDeadline: 40 * time.Second, RetryPeriod: 15 * time.Second}
	lock, err := NewLeaseLock(&rest.Config{Host: "https://127.0.0.1:1"}, "ns", "name", "me", le)
	if err != nil {
		t.Fatal(err)
	}
	if lock.Identity() != "me" || !strings.Contains(lock.Describe(), "ns/name") {
		t.Fatalf("lock %s held as %s", lock.Describe(), lock.Identity())
	}
}

func TestConfigureManager(t *testing.T) {
	t.Setenv(PodNameEnv, "cpo-a")
	le := config.LeaderElection{LeaseDuration: 60 * time.Second, RenewDeadline: 40 * time.Second, RetryPeriod: 15 * time.Second}
	opts := ctrl.Options{}
	identity, err := ConfigureManager(&opts, &rest.Config{Host: "https://127.0.0.1:1"}, true, "ns", "lease", le)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case identity != "cpo-a" || opts.LeaderElectionResourceLockInterface.Identity() != "cpo-a":
		t.Errorf("identity %q, lock held as %q", identity, opts.LeaderElectionResourceLockInterface.Identity())
	case !opts.LeaderElection || !opts.LeaderElectionReleaseOnCancel:
		t.Errorf("election %v, release on cancel %v", opts.LeaderElection, opts.LeaderElectionReleaseOnCancel)
	case *opts.LeaseDuration != le.LeaseDuration || *opts.RenewDeadline != le.RenewDeadline || *opts.RetryPeriod != le.RetryPeriod:
		t.Errorf("timings %s/%s/%s", *opts.LeaseDuration, *opts.RenewDeadline, *opts.RetryPeriod)
	}
}
