package leaderelection

import (
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

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
