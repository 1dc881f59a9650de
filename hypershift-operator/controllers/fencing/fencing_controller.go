// Package fencing is the hypershift-operator's controller for the
// cluster-scoped admission objects that fencing relies on in every
// control-plane namespace: the fencing policies (the control-plane-operator's
// and the cluster-api manager's) with their bindings, the Lease guard with
// its binding, and the keep-alive bindings that keep the API server's Lease
// param informer from being stopped (see render.FencingPolicy,
// render.LeaseGuardPolicy and render.KeepAlivePolicy). It applies them at
// start and again within moments of any change to them, whether or not a
// HostedCluster exists; which control-plane namespaces the fencing
// bindings select (their LeaderFencingLabel) is the HostedCluster
// controller's business.
package fencing

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/hypershift-le/hypershift/hypershift-operator/render"
	"github.com/hypershift-le/hypershift/support/apply"
)

// request is the one key this controller reconciles: the whole set.
var request = reconcile.Request{NamespacedName: types.NamespacedName{Name: "fencing"}}

// Reconciler applies the cluster-scoped fencing objects.
type Reconciler struct {
	// Client reads from the manager's cache and writes.
	Client client.Client
	// FieldOwner is the server-side apply field manager.
	FieldOwner string
	// Namespace is the operator's namespace, where its own Lease is the
	// keep-alive bindings' param.
	Namespace string
}

// Required are the cluster-scoped objects that fence every control-plane
// namespace (the cluster-api manager's policy serves those of platform Pod).
func Required() []client.Object {
	return []client.Object{
		render.FencingPolicy(),
		render.FencingBinding(),
		render.ClusterAPIFencingPolicy(),
		render.ClusterAPIFencingBinding(),
		render.LeaseGuardPolicy(),
		render.LeaseGuardBinding(),
	}
}

// Objects are the cluster-scoped objects the controller applies: the
// required ones and the keep-alive.
func (r *Reconciler) Objects() []client.Object {
	objects := append(Required(), render.KeepAlivePolicy())
	for _, binding := range render.KeepAliveBindings(r.Namespace) {
		objects = append(objects, binding)
	}
	return objects
}

// Reconcile applies every object; one that is converged costs no request.
func (r *Reconciler) Reconcile(ctx context.Context, _ reconcile.Request) (ctrl.Result, error) {
	apply := apply.Applier{Client: r.Client, FieldOwner: r.FieldOwner}
	for _, obj := range r.Objects() {
		applied, err := apply.Apply(ctx, obj)
		if err != nil {
			return ctrl.Result{}, err
		}
		if applied {
			ctrl.LoggerFrom(ctx).Info("Applied a fencing object", "kind", fmt.Sprintf("%T", obj), "name", obj.GetName())
		}
	}
	return ctrl.Result{}, nil
}

// SetupWithManager registers the controller: it reconciles once at start
// and on every event of the objects it applies.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	names := map[string]bool{}
	for _, obj := range r.Objects() {
		names[obj.GetName()] = true
	}
	ours := builder.WithPredicates(predicate.NewPredicateFuncs(func(obj client.Object) bool { return names[obj.GetName()] }))
	all := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{request}
	})
	atStart := source.TypedFunc[reconcile.Request](func(_ context.Context, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		queue.Add(request)
		return nil
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("fencing").
		Watches(&admissionregistrationv1.ValidatingAdmissionPolicy{}, all, ours).
		Watches(&admissionregistrationv1.ValidatingAdmissionPolicyBinding{}, all, ours).
		WatchesRawSource(atStart).
		Complete(r)
}
