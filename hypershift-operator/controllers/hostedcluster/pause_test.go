package hostedcluster_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/testutil"
)

// TestPause checks spec.pausedUntil: it freezes the control plane, reaches
// the HostedControlPlane, shows in status, and ends by itself.
func TestPause(t *testing.T) {
	startOperator(t, nil)
	c := newCluster(t, "4.17.0", nil)
	awaitControlPlane(t, c)
	before := c.pin(t, c.hc.Spec.Release.Image)
	next := c.pushRelease(t, "4.17.1")

	setPause := func(t *testing.T, value *string, image string) {
		t.Helper()
		c.update(t, func(hc *hyperv1.HostedCluster) {
			hc.Spec.PausedUntil = value
			hc.Spec.Release.Image = image
		})
	}
	hcpPausedUntil := func() (*string, error) {
		hcp := &hyperv1.HostedControlPlane{}
		err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: c.controlPlaneNamespace(), Name: c.hc.Name}, hcp)
		return hcp.Spec.PausedUntil, err
	}
	operateOn := func() (string, error) {
		d := &appsv1.Deployment{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: c.controlPlaneNamespace(), Name: "control-plane-operator"}, d); err != nil {
			return "", err
		}
		for _, e := range d.Spec.Template.Spec.Containers[0].Env {
			if e.Name == "OPERATE_ON_RELEASE_IMAGE" {
				return e.Value, nil
			}
		}
		return "", fmt.Errorf("no OPERATE_ON_RELEASE_IMAGE")
	}

	t.Run("when paused with true, nothing rolls out and the HostedControlPlane is paused too", func(t *testing.T) {
		setPause(t, ptr.To("true"), next)
		testutil.Eventually(t, converge, func() error {
			cond := meta.FindStatusCondition(c.get(t).Status.Conditions, hyperv1.ReconciliationActive)
			if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != "ReconciliationPaused" {
				return fmt.Errorf("ReconciliationActive = %+v", cond)
			}
			paused, err := hcpPausedUntil()
			if err != nil || paused == nil || *paused != "true" {
				return fmt.Errorf("HostedControlPlane pausedUntil = %v (%w)", paused, err)
			}
			return nil
		})
		time.Sleep(2 * time.Second)
		if got, err := operateOn(); err != nil || got != before {
			t.Fatalf("while paused the CPO must stay on %s, got %s (%v)", before, got, err)
		}
	})

	t.Run("when the pause date passes, reconciliation resumes without a restart", func(t *testing.T) {
		until := time.Now().Add(3 * time.Second).UTC().Format(time.RFC3339)
		setPause(t, ptr.To(until), next)
		testutil.Eventually(t, converge, func() error {
			cond := meta.FindStatusCondition(c.get(t).Status.Conditions, hyperv1.ReconciliationActive)
			if cond == nil || !strings.Contains(cond.Message, until) {
				return fmt.Errorf("ReconciliationActive = %+v, want the date %s", cond, until)
			}
			return nil
		})
		testutil.Eventually(t, converge, func() error {
			if got, err := operateOn(); err != nil || got != c.pin(t, next) {
				return fmt.Errorf("OPERATE_ON_RELEASE_IMAGE = %s (%w), want %s", got, err, c.pin(t, next))
			}
			return checkCondition(c.get(t), hyperv1.ReconciliationActive, metav1.ConditionTrue)
		})
	})

	t.Run("when pausedUntil is removed, the HostedControlPlane loses it too", func(t *testing.T) {
		setPause(t, nil, next)
		testutil.Eventually(t, converge, func() error {
			if paused, err := hcpPausedUntil(); err != nil || paused != nil {
				return fmt.Errorf("HostedControlPlane pausedUntil = %v (%w)", paused, err)
			}
			return nil
		})
	})
}
