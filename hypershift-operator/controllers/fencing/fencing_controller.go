// Package fencing is the hypershift-operator's controller for the
// cluster-scoped admission objects that fencing relies on in every
// control-plane namespace: the fencing policies (the control-plane-operator's
// and the cluster-api manager's) with their bindings, the Lease guard with
// its binding, and the keep-alive bindings that keep the API server's Lease
// param informer from being stopped (see render.FencingPolicy,
// render.LeaseGuardPolicy and render.KeepAlivePolicy), and the
// hypershift-operator's own fencing policies with their bindings per
// shard, the whole being one shard owned through the operator's Lease
// (render.OperatorFencingPolicy, render.OperatorObjectFencingPolicy).
// It applies them at start and again within moments of any change to them,
// whether or not a HostedCluster exists; which control-plane namespaces
// the fencing bindings select (their LeaderFencingLabel and
// OperatorShardLabel) is the HostedCluster controller's business. With
// fencing off, Unfenced deletes the operator's own bindings instead.
package fencing

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/rbac"
	"github.com/hypershift-le/hypershift/hypershift-operator/render"
	"github.com/hypershift-le/hypershift/support/apply"
	"github.com/hypershift-le/hypershift/support/config"
	"github.com/hypershift-le/hypershift/support/leaderelection"
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
	// keep-alive bindings' param, and its shards' Leases the shard
	// fencing bindings'.
	Namespace string
	// Shards is the operator's shard count (--shards): the operator's
	// fencing bindings of every shard (render.OperatorShardBindings), each
	// with its shard's Lease, the operator's own for one shard; the
	// bindings of shards beyond it are deleted.
	Shards int
	// Elected says the operator runs under its Lease (--leader-elect);
	// without one, no Lease judges its writes: it has no bindings.
	Elected bool
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
// required ones, the keep-alive, the operator's fencing policies and,
// when it runs under Leases, their bindings per shard.
func (r *Reconciler) Objects() []client.Object {
	objects := append(Required(), render.KeepAlivePolicy())
	for _, binding := range render.KeepAliveBindings(r.Namespace) {
		objects = append(objects, binding)
	}
	objects = append(objects,
		render.OperatorFencingPolicy(r.Namespace, rbac.HypershiftOperatorName),
		render.OperatorObjectFencingPolicy(r.Namespace, rbac.HypershiftOperatorName))
	for i := range r.shards() {
		shard := leaderelection.Shard{Index: i, Count: r.Shards}
		for _, binding := range render.OperatorShardBindings(i, shard.Label(), r.Namespace, shard.LeaseName(hyperv1.HypershiftOperatorLeaseName)) {
			objects = append(objects, binding)
		}
	}
	return objects
}

// shards is how many shards have fencing bindings: none without a Lease.
func (r *Reconciler) shards() int {
	if !r.Elected {
		return 0
	}
	return max(r.Shards, 1)
}

// stale names the shard fencing bindings of shards the operator does not
// run (a count lowered, or leader election turned off).
func (r *Reconciler) stale() []string {
	var names []string
	for i := r.shards(); i < config.MaxShards; i++ {
		names = append(names, render.OperatorShardBindingNames(i)...)
	}
	return names
}

// Reconcile applies every object, and deletes the stale shard bindings it
// finds; a converged set costs no request.
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
	for _, name := range r.stale() {
		binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
		if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, binding); apierrors.IsNotFound(err) {
			continue
		} else if err != nil {
			return ctrl.Result{}, fmt.Errorf("failed to get ValidatingAdmissionPolicyBinding %s: %w", name, err)
		}
		if err := r.Client.Delete(ctx, binding, client.Preconditions{UID: &binding.UID}); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("failed to delete ValidatingAdmissionPolicyBinding %s, of a shard beyond --shards=%d: %w", name, r.Shards, err)
		}
		ctrl.LoggerFrom(ctx).Info("Deleted the fencing binding of a shard beyond the shard count", "name", name, "shards", r.Shards)
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
	for _, name := range r.stale() {
		names[name] = true
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
