package hostedcluster_test

import (
	"fmt"
	"testing"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/testutil"
)

// TestDisruptionBudgetIsRepaired: a HighlyAvailable cluster's CPO
// PodDisruptionBudget comes back when deleted and when its spec is
// changed (the watch passes what changes its generation), and a status
// written by the disruption controller makes the HO write nothing.
func TestDisruptionBudgetIsRepaired(t *testing.T) {
	user := startOperator(t, nil)
	c := newCluster(t, "4.17.0", func(hc *hyperv1.HostedCluster) {
		hc.Spec.ControllerAvailabilityPolicy = hyperv1.HighlyAvailable
	})
	ns := c.controlPlaneNamespace()
	budget := func() (*policyv1.PodDisruptionBudget, error) {
		got := &policyv1.PodDisruptionBudget{}
		err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: hyperv1.ControlPlaneOperatorName}, got)
		return got, err
	}
	wantOneUnavailable := func() error {
		got, err := budget()
		if err != nil {
			return err
		}
		if got.Spec.MaxUnavailable == nil || got.Spec.MaxUnavailable.IntValue() != 1 {
			return fmt.Errorf("maxUnavailable %v, want 1", got.Spec.MaxUnavailable)
		}
		return nil
	}
	testutil.Eventually(t, converge, wantOneUnavailable)

	t.Run("deleted, it comes back", func(t *testing.T) {
		got, err := budget()
		if err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Delete(t.Context(), got); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, repairTime, wantOneUnavailable)
	})

	t.Run("its spec changed, it comes back", func(t *testing.T) {
		got, err := budget()
		if err != nil {
			t.Fatal(err)
		}
		if err := mergePatch(t, got, `{"spec":{"maxUnavailable":2}}`); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, repairTime, wantOneUnavailable)
	})

	t.Run("its status written, the HO writes nothing", func(t *testing.T) {
		time.Sleep(time.Second)
		quiet := time.Now()
		for i := range 3 {
			got, err := budget()
			if err != nil {
				t.Fatal(err)
			}
			got.Status.ObservedGeneration = got.Generation
			got.Status.ExpectedPods = 2
			got.Status.CurrentHealthy = int32(1 + i%2)
			got.Status.DesiredHealthy = 1
			got.Status.DisruptionsAllowed = int32(i % 2)
			if err := env.Client.Status().Update(t.Context(), got); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(2 * time.Second)
		if writes := writesBy(t, user, quiet, ns); len(writes) > 0 {
			t.Fatalf("the operator wrote:%s", describe(writes))
		}
	})
}
