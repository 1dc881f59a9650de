package leaderelection

import (
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/config"
)

func TestIdentity(t *testing.T) {
	t.Run("when POD_NAME is set, it is the identity", func(t *testing.T) {
		t.Setenv(hyperv1.PodNameEnv, "control-plane-operator-7d9c8b6f5-x2x4z")
		if got, err := Identity(); err != nil || got != "control-plane-operator-7d9c8b6f5-x2x4z" {
			t.Fatalf("Identity() = %q, %v", got, err)
		}
	})
	t.Run("when POD_NAME is unset, two candidates on one host differ", func(t *testing.T) {
		t.Setenv(hyperv1.PodNameEnv, "")
		a, errA := Identity()
		b, errB := Identity()
		if errA != nil || errB != nil || a == b || !strings.Contains(a, "_") {
			t.Fatalf("Identity() = %q, %q (%v, %v)", a, b, errA, errB)
		}
	})
}

func TestNewManager(t *testing.T) {
	restConfig := &rest.Config{Host: "https://127.0.0.1:1"}
	t.Run("when election is on, controllers are held back and the rest starts with the manager", func(t *testing.T) {
		t.Setenv(hyperv1.PodNameEnv, "cpo-a")
		mgr, elector, err := NewManager(t.Context(), restConfig, ctrl.Options{}, Election{Enabled: true, Namespace: "ns", Name: "lease", Timings: config.DefaultControlPlaneOperatorTimings}, ctrl.Log)
		if err != nil {
			t.Fatal(err)
		}
		if elector == nil || elector.Identity() != "cpo-a" {
			t.Fatalf("elector %v", elector)
		}
		gated := mgr
		if err := mgr.Add(manager.RunnableFunc(nil)); err != nil {
			t.Fatal(err)
		}
		if err := mgr.Add(notLeaderOnly{}); err != nil {
			t.Fatal(err)
		}
		if len(gated.gated) != 1 {
			t.Fatalf("%d runnables held back, want 1 (the one that does not opt out)", len(gated.gated))
		}
	})
	t.Run("when the timings are unsafe, the manager is refused", func(t *testing.T) {
		le := config.DefaultControlPlaneOperatorTimings
		le.RenewDeadline = le.LeaseDuration
		if _, _, err := NewManager(t.Context(), restConfig, ctrl.Options{}, Election{Enabled: true, Namespace: "ns", Name: "lease", Timings: le}, ctrl.Log); err == nil || !strings.Contains(err.Error(), "must exceed the renew deadline") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("when election is off, there is no elector", func(t *testing.T) {
		mgr, elector, err := NewManager(t.Context(), restConfig, ctrl.Options{}, Election{}, ctrl.Log)
		if err != nil || elector != nil {
			t.Fatalf("elector %v, err %v", elector, err)
		}
		if err := mgr.Add(manager.RunnableFunc(nil)); err != nil || len(mgr.gated) != 0 {
			t.Fatalf("the manager holds runnables back without an election (%v)", err)
		}
	})
}

type notLeaderOnly struct{ manager.Runnable }

func (notLeaderOnly) NeedLeaderElection() bool { return false }
