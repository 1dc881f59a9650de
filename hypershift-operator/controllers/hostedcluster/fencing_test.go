package hostedcluster_test

import (
	"fmt"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
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

// TestClusterAPIFencingLifecycle checks that, for a cluster of platform
// Pod, the HO creates the cluster-api manager's Lease and binds the
// cluster-api fencing policy before the manager's Deployment exists, and
// removes the binding on teardown.
func TestClusterAPIFencingLifecycle(t *testing.T) {
	startOperator(t, func(r *hostedcluster.Reconciler) { r.Fencing = hostedcluster.Fencing{Enabled: true} })
	c := newCluster(t, "4.17.0", func(hc *hyperv1.HostedCluster) {
		hc.Spec.Platform.Type = hyperv1.PodPlatform
		hc.Annotations = map[string]string{hyperv1.ClusterAPIManagerImageAnnotation: "registry.example/cluster-api:v1.13.6"}
	})
	ns := c.controlPlaneNamespace()
	bindingKey := client.ObjectKey{Name: render.ClusterAPIFencingBindingName(ns)}
	testutil.Eventually(t, converge, func() error {
		return env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: hyperv1.ClusterAPIName}, &appsv1.Deployment{})
	})
	// The Deployment exists: its fence must have been in place first.
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	if err := env.Client.Get(t.Context(), bindingKey, binding); err != nil {
		t.Fatalf("the cluster-api manager's Deployment exists without its fencing binding: %v", err)
	}
	if binding.Spec.PolicyName != render.ClusterAPIFencingPolicyName || binding.Spec.ParamRef == nil || binding.Spec.ParamRef.Name != hyperv1.ClusterAPILeaseName {
		t.Fatalf("binding %+v", binding.Spec)
	}
	lease := &coordinationv1.Lease{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: hyperv1.ClusterAPILeaseName}, lease); err != nil {
		t.Fatalf("the cluster-api manager's Deployment exists without its Lease: %v", err)
	}
	if lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "" {
		t.Fatalf("the Lease was created with holder %q; want none", *lease.Spec.HolderIdentity)
	}
	testutil.Eventually(t, converge, func() error {
		return env.Client.Get(t.Context(), client.ObjectKey{Name: render.ClusterAPIFencingPolicyName}, &admissionregistrationv1.ValidatingAdmissionPolicy{})
	})

	if err := env.Client.Delete(t.Context(), c.get(t)); err != nil {
		t.Fatal(err)
	}
	awaitGone(t, c)
	if err := env.Client.Get(t.Context(), bindingKey, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the cluster-api fencing binding outlived its cluster (%v)", err)
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
