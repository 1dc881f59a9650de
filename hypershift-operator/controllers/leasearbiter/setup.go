package leasearbiter

import (
	"context"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/nodeheartbeat"
	"github.com/hypershift-le/hypershift/hypershift-operator/render"
	"github.com/hypershift-le/hypershift/support/leasestate"
)

// PodLabels select the control-plane-operator's pods (the label of its
// Deployment's template).
var PodLabels = labels.Set{"app": hyperv1.ControlPlaneOperatorName}

// AddCacheOptions limits the manager's cache of pods to the
// control-plane-operator's: the controller watches their metadata only.
// The manager must also cache Leases, namespaces, HostedClusters and the
// fencing policy and bindings, as the HostedCluster controller's
// CacheOptions do.
func AddCacheOptions(opts *cache.Options) {
	if opts.ByObject == nil {
		opts.ByObject = map[client.Object]cache.ByObject{}
	}
	opts.ByObject[&corev1.Pod{}] = cache.ByObject{Label: labels.SelectorFromSet(PodLabels)}
}

// SetupWithManager registers the controller. A Lease is looked at when it
// is created or its holder changes (never on a renewal), when a
// control-plane-operator pod in its namespace changes, and when its
// HostedCluster does (its fence observed, its pause lifted).
//
// A node whose kubelet goes silent (Heartbeats) wakes the Leases whose
// holders run on it. The tracker is subscribed to for the term only.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.heartbeats = r.Heartbeats
	if r.heartbeats == nil {
		// One for the term, fed by a cache that runs with it.
		r.heartbeats = nodeheartbeat.New(r.NodeLostAfter, r.now)
		if err := r.heartbeats.Watch(mgr); err != nil {
			return err
		}
	}
	r.lostNodes = make(chan event.GenericEvent)
	unsubscribe := r.heartbeats.Subscribe(r.nodeLost)
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		unsubscribe()
		return nil
	})); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(r.Shard.Name("leasearbiter")).
		WithOptions(controller.Options{NewQueue: r.Shard.NewQueue(r.shardKey)}).
		For(&coordinationv1.Lease{}, builder.WithPredicates(controlPlaneOperatorLease, holderChanged)).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(leaseOfNamespace), builder.OnlyMetadata).
		Watches(&hyperv1.HostedCluster{}, handler.EnqueueRequestsFromMapFunc(leaseOfCluster)).
		WatchesRawSource(source.Channel(r.lostNodes, &handler.EnqueueRequestForObject{})).
		Complete(r)
}

// shardKey is the shard key of a CPO Lease request: the HostedCluster's
// its control-plane namespace was created for, from the namespace in the
// manager's cache.
func (r *Reconciler) shardKey(ctx context.Context, req reconcile.Request) (string, bool) {
	namespace := &corev1.Namespace{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: req.Namespace}, namespace); err != nil {
		return "", false
	}
	cluster, ok := render.ClusterOf(namespace)
	if !ok {
		return "", false
	}
	return hyperv1.HostedClusterShardKey(cluster.Namespace, cluster.Name), true
}

// controlPlaneOperatorLease passes the CPO Leases only.
var controlPlaneOperatorLease = predicate.NewPredicateFuncs(func(obj client.Object) bool {
	return obj.GetName() == hyperv1.ControlPlaneOperatorLeaseName
})

// holderChanged drops renewals: updates that keep the holder.
var holderChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		oldLease, ok1 := e.ObjectOld.(*coordinationv1.Lease)
		newLease, ok2 := e.ObjectNew.(*coordinationv1.Lease)
		return !ok1 || !ok2 || leasestate.Holder(oldLease) != leasestate.Holder(newLease)
	},
	DeleteFunc: func(event.DeleteEvent) bool { return false },
}

// leaseOfNamespace maps a pod to the CPO Lease of its namespace.
func leaseOfNamespace(_ context.Context, obj client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: hyperv1.ControlPlaneOperatorLeaseName}}}
}

// leaseOfCluster maps a HostedCluster to the CPO Lease of its control-plane
// namespace.
func leaseOfCluster(_ context.Context, obj client.Object) []reconcile.Request {
	ns := hyperv1.ControlPlaneNamespace(obj.GetNamespace(), obj.GetName())
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: hyperv1.ControlPlaneOperatorLeaseName}}}
}
