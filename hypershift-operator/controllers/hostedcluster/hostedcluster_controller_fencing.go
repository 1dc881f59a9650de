package hostedcluster

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/render"
)

// LeaderFencing is the condition type that says whether the API server
// refuses writes by control-plane-operator pods that do not hold the Lease.
const LeaderFencing = "LeaderFencing"

// Fencing says whether the HO binds the fencing policy to control-plane
// namespaces (see render.FencingPolicy).
type Fencing struct {
	// Enabled is the operator's --enable-fencing.
	Enabled bool
	// Unavailable, when not empty, says why the API server cannot fence
	// (no ValidatingAdmissionPolicy API, no pod name in tokens).
	Unavailable string
}

// reconcileFencing applies the policy and this namespace's binding, or
// removes the binding when fencing is off, and reports which in status.
func (r *Reconciler) reconcileFencing(ctx context.Context, in render.Inputs) error {
	hc := in.HostedCluster
	switch {
	case !r.Fencing.Enabled:
		setCondition(hc, LeaderFencing, metav1.ConditionFalse, "Disabled", "Fencing is disabled (--enable-fencing=false): the API server does not check that control-plane-operator writes come from the Lease holder")
		return r.deleteFencingBinding(ctx, in.Namespace(), render.ClusterKey(hc))
	case r.Fencing.Unavailable != "":
		setCondition(hc, LeaderFencing, metav1.ConditionFalse, "Unsupported", r.Fencing.Unavailable)
		return nil
	}
	// The binding's param must exist before the binding does: with no
	// Lease to read, the API server refuses every write in the namespace,
	// by anyone. The CPO takes this empty Lease as it would a released one.
	if err := r.ensureLease(ctx, in.Namespace()); err != nil {
		return err
	}
	apply := r.applier()
	if _, err := apply.Apply(ctx, render.FencingPolicy()); err != nil {
		return err
	}
	if _, err := apply.Apply(ctx, render.FencingBinding(in)); err != nil {
		return err
	}
	setCondition(hc, LeaderFencing, metav1.ConditionTrue, "AsExpected",
		"The API server refuses writes by control-plane-operator pods other than the holder of Lease "+in.Namespace()+"/"+hyperv1.ControlPlaneOperatorLeaseName)
	return nil
}

// deleteFencingBinding removes the binding of namespace, if there is one
// and it serves the HostedCluster clusterKey.
func (r *Reconciler) deleteFencingBinding(ctx context.Context, namespace, clusterKey string) error {
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	binding.Name = render.FencingBindingName(namespace)
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(binding), binding); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("failed to get fencing binding %s: %w", binding.Name, err)
	}
	if binding.Annotations[hyperv1.ClusterAnnotation] != clusterKey {
		return nil
	}
	if err := r.Client.Delete(ctx, binding); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("failed to delete fencing binding %s: %w", binding.Name, err)
	}
	return nil
}

// ensureLease creates the CPO Lease, with no holder, when it is missing.
func (r *Reconciler) ensureLease(ctx context.Context, namespace string) error {
	key := client.ObjectKey{Namespace: namespace, Name: hyperv1.ControlPlaneOperatorLeaseName}
	if err := r.Client.Get(ctx, key, &coordinationv1.Lease{}); !apierrors.IsNotFound(err) {
		return err
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: key.Name}}
	if err := r.Client.Create(ctx, lease, client.FieldOwner(FieldOwner)); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("failed to create Lease %s: %w", key, err)
	}
	return nil
}
