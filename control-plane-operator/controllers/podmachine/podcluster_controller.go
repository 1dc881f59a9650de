package podmachine

import (
	"context"
	"fmt"

	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	infrav1 "github.com/hypershift-le/hypershift/api/infrastructure/v1beta1"
)

// ClusterReconciler marks the PodCluster of its HostedControlPlane (of
// the same name) provisioned: the management cluster, which runs the
// machines, is all the infrastructure there is.
type ClusterReconciler struct {
	Client client.Client
	// HostedControlPlane names the HostedControlPlane, and the PodCluster.
	HostedControlPlane string
}

// SetupWithManager watches the one PodCluster.
func (r *ClusterReconciler) SetupWithManager(mgr ctrl.Manager) error {
	own := predicate.NewPredicateFuncs(func(obj client.Object) bool { return obj.GetName() == r.HostedControlPlane })
	return ctrl.NewControllerManagedBy(mgr).
		Named("podcluster").
		For(&infrav1.PodCluster{}, builder.WithPredicates(own)).
		Complete(r)
}

// Reconcile marks the PodCluster provisioned, once.
func (r *ClusterReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pc := &infrav1.PodCluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, pc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !pc.DeletionTimestamp.IsZero() || (pc.Status.Initialization != nil && ptr.Deref(pc.Status.Initialization.Provisioned, false)) {
		return ctrl.Result{}, nil
	}
	pc.Status.Initialization = &infrav1.Initialization{Provisioned: ptr.To(true)}
	if err := r.Client.Status().Update(ctx, pc, client.FieldOwner(FieldOwner)); err != nil {
		return ctrl.Result{}, fmt.Errorf("failed to mark PodCluster %s provisioned: %w", pc.Name, err)
	}
	return ctrl.Result{}, nil
}
