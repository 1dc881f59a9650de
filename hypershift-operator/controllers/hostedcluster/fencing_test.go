package hostedcluster_test

import (
	"fmt"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hypershift-le/hypershift/hypershift-operator/controllers/hostedcluster"
	"github.com/hypershift-le/hypershift/hypershift-operator/render"
	"github.com/hypershift-le/hypershift/support/testutil"
)

// TestFencingLifecycle checks the HO binds the fencing policy to a new
// control-plane namespace, says so, and removes the binding on teardown.
func TestFencingLifecycle(t *testing.T) {
	startOperator(t, func(r *hostedcluster.Reconciler) { r.Fencing = hostedcluster.Fencing{Enabled: true} })
	c := newCluster(t, "4.17.0", nil)
	bindingKey := client.ObjectKey{Name: render.FencingBindingName(c.controlPlaneNamespace())}
	testutil.Eventually(t, converge, func() error {
		if err := env.Client.Get(t.Context(), client.ObjectKey{Name: render.FencingPolicyName}, &admissionregistrationv1.ValidatingAdmissionPolicy{}); err != nil {
			return err
		}
		binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
		if err := env.Client.Get(t.Context(), bindingKey, binding); err != nil {
			return err
		}
		if binding.Spec.ParamRef == nil || binding.Spec.ParamRef.Name != "control-plane-operator-leader-elect" {
			return fmt.Errorf("paramRef %+v", binding.Spec.ParamRef)
		}
		return checkCondition(c.get(t), hostedcluster.LeaderFencing, metav1.ConditionTrue)
	})

	if err := env.Client.Delete(t.Context(), c.get(t)); err != nil {
		t.Fatal(err)
	}
	awaitGone(t, c)
	if err := env.Client.Get(t.Context(), bindingKey, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the fencing binding outlived its cluster (%v)", err)
	}
}

// TestFencingDisabled checks the condition says so.
func TestFencingDisabled(t *testing.T) {
	startOperator(t, nil)
	c := newCluster(t, "4.17.0", nil)
	testutil.Eventually(t, converge, func() error {
		return checkCondition(c.get(t), hostedcluster.LeaderFencing, metav1.ConditionFalse)
	})
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: render.FencingBindingName(c.controlPlaneNamespace())}, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a binding exists though fencing is off (%v)", err)
	}
}
