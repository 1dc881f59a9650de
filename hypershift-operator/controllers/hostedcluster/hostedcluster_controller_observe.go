package hostedcluster

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/leasestate"
)

// observe reads what status shows of a claimed control plane, even when a
// phase failed: the HostedControlPlane, the CPO Deployment and the CPO
// Lease (observation), whether lost nodes keep it from serving
// (observeLostNodes), and what the API server does with the fence
// (observeFencing). A read that fails leaves observed nil: status then
// keeps what it showed.
func (r *Reconciler) observe(ctx context.Context, s *scope) (ctrl.Result, error) {
	hcp := &hyperv1.HostedControlPlane{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: s.hc.Name}, hcp); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("failed to get HostedControlPlane: %w", err)
		}
		hcp = nil
	}
	deployment := &appsv1.Deployment{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: hyperv1.ControlPlaneOperatorName}, deployment); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("failed to get the control-plane-operator Deployment: %w", err)
		}
		deployment = nil
	}
	lease := &coordinationv1.Lease{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: hyperv1.ControlPlaneOperatorLeaseName}, lease); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("failed to get the control-plane-operator Lease: %w", err)
		}
		lease = nil
	}
	s.observed = &observation{hcp: hcp, deployment: deployment, lease: lease}
	if silent, duration := r.silentLease(lease); silent {
		s.observed.silentFor = duration
	} else if lease != nil && r.leases != nil && reportedSilent(s.original, lease) {
		if silent, duration := r.leases.inheritSilence(lease); silent {
			s.observed.silentFor = duration
		}
	}
	if err := r.observeLostNodes(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	return r.observeFencing(ctx, s, lease)
}

// silentLease reports whether the CPO Lease has gone unchanged for its
// lease duration (leaseClock), and that duration.
func (r *Reconciler) silentLease(lease *coordinationv1.Lease) (bool, time.Duration) {
	if lease == nil || r.leases == nil {
		return false, 0
	}
	return r.leases.silent(client.ObjectKeyFromObject(lease))
}

// reportedSilent reports whether hc's status says the CPO Lease went silent
// under the holder and transitions lease shows now: a silence an earlier
// process judged, which this one's clock cannot judge yet (inheritSilence).
func reportedSilent(hc *hyperv1.HostedCluster, lease *coordinationv1.Lease) bool {
	available := meta.FindStatusCondition(hc.Status.Conditions, hyperv1.Available)
	if available == nil || available.Status != metav1.ConditionUnknown || available.Reason != hyperv1.ControlPlaneOperatorSilentReason {
		return false
	}
	reported := hc.Status.ControlPlaneOperator
	return reported != nil && *reported == *leaderStatus(lease)
}

// leaderStatus is what status shows of the Lease: only what changes with
// leadership, never renewTime, so a renewal causes no status write.
func leaderStatus(lease *coordinationv1.Lease) *hyperv1.ControlPlaneOperatorStatus {
	if lease == nil {
		return nil
	}
	status := &hyperv1.ControlPlaneOperatorStatus{HolderIdentity: leasestate.Holder(lease)}
	if lease.Spec.LeaseTransitions != nil {
		status.LeaseTransitions = *lease.Spec.LeaseTransitions
	}
	return status
}

// rolledOut reports whether the CPO Deployment is rendered for release and
// the Deployment controller has rolled that template out to every replica.
func rolledOut(d *appsv1.Deployment, release string) bool {
	if d == nil || len(d.Spec.Template.Spec.Containers) == 0 {
		return false
	}
	rendered := false
	for _, env := range d.Spec.Template.Spec.Containers[0].Env {
		if env.Name == hyperv1.OperateOnReleaseImageEnv {
			rendered = env.Value == release
		}
	}
	replicas := int32(1)
	if d.Spec.Replicas != nil {
		replicas = *d.Spec.Replicas
	}
	return rendered && d.Status.ObservedGeneration >= d.Generation &&
		d.Status.UpdatedReplicas == replicas && d.Status.Replicas == replicas
}
