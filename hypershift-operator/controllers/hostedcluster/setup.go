package hostedcluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
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
	"github.com/hypershift-le/hypershift/hypershift-operator/controllers/fencing"
	"github.com/hypershift-le/hypershift/hypershift-operator/render"
	"github.com/hypershift-le/hypershift/support/backoff"
	"github.com/hypershift-le/hypershift/support/config"
	"github.com/hypershift-le/hypershift/support/leaderelection"
)

// secretCopies selects the Secrets the HO copies: the pull secret into a
// control-plane namespace, the admin kubeconfig out of it.
var secretCopies = func() labels.Selector {
	req, err := labels.NewRequirement(hyperv1.SecretCopyLabel, selection.Exists, nil)
	if err != nil {
		panic(err)
	}
	return labels.NewSelector().Add(*req)
}()

// clusterScopedObjects selects the cluster-scoped objects the HO creates
// for a HostedCluster (the CPO's auth-delegator ClusterRoleBinding).
var clusterScopedObjects = func() labels.Selector {
	req, err := labels.NewRequirement(render.ControlPlaneNamespaceLabel, selection.Exists, nil)
	if err != nil {
		panic(err)
	}
	return labels.NewSelector().Add(*req)
}()

// CacheOptions limits the manager's cache to what this controller needs:
// control-plane namespaces, only the CPO Lease of each namespace, of
// Secrets only the copies it writes (watched for drift; reads of Secrets go
// past the cache), of ClusterRoleBindings and Services only those it
// creates, of DaemonSets only the machine image caches, of
// PodDisruptionBudgets only the CPO's, and of NetworkPolicies only its
// own. The admin kubeconfigs it copies from are watched through a cache of
// their own (kubeconfigSources).
func CacheOptions() cache.Options {
	return cache.Options{
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Namespace{}:          {Label: labels.SelectorFromSet(labels.Set{hyperv1.HostedControlPlaneLabel: "true"})},
			&corev1.Secret{}:             {Label: secretCopies},
			&rbacv1.ClusterRoleBinding{}: {Label: clusterScopedObjects},
			&corev1.Service{}:            {Label: labels.SelectorFromSet(render.MetricsServiceLabels())},
			&coordinationv1.Lease{}: {
				Field: fields.OneTermEqualSelector("metadata.name", hyperv1.ControlPlaneOperatorLeaseName),
			},
			&appsv1.DaemonSet{}: {Field: fields.OneTermEqualSelector("metadata.name", hyperv1.MachineImageCacheName)},
			&policyv1.PodDisruptionBudget{}: {
				Field: fields.OneTermEqualSelector("metadata.name", hyperv1.ControlPlaneOperatorName),
			},
			&networkingv1.NetworkPolicy{}: {Label: labels.SelectorFromSet(labels.Set{render.NetworkPolicyLabel: "true"})},
		},
	}
}

// ClientOptions makes the manager's client read Secrets past the cache:
// the cache holds only the copies the HO writes, and a Secret it does not
// show is not known missing. The applier reads the copies from the cache
// first (secretCopiesFirst).
func ClientOptions() client.Options {
	return client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}}
}

// secretCopiesFirst reads Secrets from the manager's cache, which holds
// the copies the HO writes (secretCopies), and reads past it a Secret the
// cache does not show (not yet seen, or not labelled as a copy), except in
// the namespace created, which the pass reading created; other kinds are
// read from client.
type secretCopiesFirst struct {
	cache   client.Reader
	client  client.Reader
	created string
}

func (r secretCopiesFirst) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*corev1.Secret); ok && r.cache != nil {
		err := r.cache.Get(ctx, key, obj, opts...)
		if !apierrors.IsNotFound(err) || key.Namespace == r.created {
			return err
		}
	}
	return r.client.Get(ctx, key, obj, opts...)
}

func (r secretCopiesFirst) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return r.client.List(ctx, list, opts...)
}

// maxConcurrentReconciles is the worker count the controller runs with.
func (r *Reconciler) maxConcurrentReconciles() int {
	if r.MaxConcurrentReconciles <= 0 {
		return config.DefaultMaxConcurrentReconciles
	}
	return r.MaxConcurrentReconciles
}

// controlPlaneNamespaceIndex indexes HostedClusters by the name of their
// control-plane namespace, which several HostedClusters can share.
const controlPlaneNamespaceIndex = "controlPlaneNamespace"

// SetupCaches registers what the controller reads and that outlives its
// terms, once per process, before the manager starts: the indexes of
// HostedClusters by control-plane namespace, by pull secret and by node port, the cache
// of the Secrets in which the control-plane-operators publish their admin
// kubeconfigs, and the cache of Secrets' metadata that tells of pull
// secrets; both caches run on every replica, as the manager's cache does.
func (r *Reconciler) SetupCaches(ctx context.Context, mgr ctrl.Manager) error {
	err := mgr.GetFieldIndexer().IndexField(ctx, &hyperv1.HostedCluster{}, controlPlaneNamespaceIndex, func(obj client.Object) []string {
		return []string{hyperv1.ControlPlaneNamespace(obj.GetNamespace(), obj.GetName())}
	})
	if err != nil {
		return fmt.Errorf("failed to index HostedClusters by control-plane namespace: %w", err)
	}
	if err := indexPullSecrets(ctx, mgr); err != nil {
		return err
	}
	if err := indexNodePorts(ctx, mgr); err != nil {
		return err
	}
	if r.pullSecrets, err = pullSecretSources(mgr); err != nil {
		return err
	}
	r.secrets = &userSecrets{metadata: r.pullSecrets, api: r.APIReader}
	r.cache = mgr.GetCache()
	if r.kubeconfigs, err = kubeconfigSources(mgr); err != nil {
		return err
	}
	return warmCache(ctx, mgr)
}

// watchedKinds are the kinds SetupWithManager watches through the
// manager's cache.
func watchedKinds() []client.Object {
	return []client.Object{
		&hyperv1.HostedCluster{}, &hyperv1.HostedControlPlane{}, &hyperv1.NodePool{},
		&corev1.Namespace{}, &appsv1.Deployment{}, &appsv1.DaemonSet{}, &policyv1.PodDisruptionBudget{},
		&corev1.ServiceAccount{}, &corev1.Secret{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}, &rbacv1.ClusterRoleBinding{},
		&corev1.Service{}, &admissionregistrationv1.ValidatingAdmissionPolicy{},
		&admissionregistrationv1.ValidatingAdmissionPolicyBinding{}, &coordinationv1.Lease{},
		&hyperv1.EtcdBackup{}, &batchv1.Job{}, &networkingv1.NetworkPolicy{},
	}
}

// warmCache registers the informers of every watched kind with the
// manager's cache before it starts, so that they run on every replica, as
// the cache does, and not only from the moment a replica leads (when the
// controller's watches would ask for them): a standby that takes over
// starts its first pass over every HostedCluster with the cache filled,
// instead of listing every kind first.
func warmCache(ctx context.Context, mgr ctrl.Manager) error {
	for _, obj := range watchedKinds() {
		if _, err := mgr.GetCache().GetInformer(ctx, obj); err != nil {
			return fmt.Errorf("failed to register the cache's informer for %T: %w", obj, err)
		}
	}
	return nil
}

// SetupWithManager registers the controller and its watches (SetupCaches
// must have run on the process's manager).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.kubeconfigs == nil || r.pullSecrets == nil {
		return errors.New("the HostedCluster controller's caches are not set up: call SetupCaches first")
	}
	r.waits = &waitBackoff{clock: clock.RealClock{}}
	r.leases = &leaseClock{clock: clock.RealClock{}, fallback: r.ControlPlaneOperatorTimings.LeaseDuration, requests: r.clusterFromLease}
	byAnnotation := handler.EnqueueRequestsFromMapFunc(clusterFromAnnotation)
	b := ctrl.NewControllerManagedBy(mgr)
	if r.Heartbeats != nil {
		// A node lost or found wakes the HostedClusters whose control planes
		// serve from it, for this term only; so do the nodes already lost
		// when it begins.
		wake := make(chan event.GenericEvent)
		if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
			unsubscribe := r.Heartbeats.Subscribe(func(node string, lost bool) { go r.wakeClustersOnNode(ctx, node, lost, wake) })
			// Nodes lost before the term began (this replica tracked them).
			for node := range r.Heartbeats.Lost() {
				go r.wakeClustersOnNode(ctx, node, true, wake)
			}
			<-ctx.Done()
			unsubscribe()
			return nil
		})); err != nil {
			return err
		}
		b = b.WatchesRawSource(source.Channel(wake, &handler.EnqueueRequestForObject{}))
	}
	return b.
		Named(r.Shard.Name("hostedcluster")).
		// HostedClusters are reconciled side by side; one is never
		// reconciled twice at once (the work queue's guarantee). A shard's
		// queue takes only its HostedClusters.
		WithOptions(controller.Options{MaxConcurrentReconciles: r.maxConcurrentReconciles(), RateLimiter: backoff.FailureRateLimiter(), NewQueue: r.Shard.NewQueue(ShardKey)}).
		// Its own status writes do not come back as passes.
		For(&hyperv1.HostedCluster{}, builder.WithPredicates(notOnlyStatus)).
		// The HostedCluster refused a node port another holds learns when
		// that one lets it go.
		Watches(&hyperv1.HostedCluster{}, handler.EnqueueRequestsFromMapFunc(r.clustersOnNodePort)).
		Watches(&hyperv1.HostedControlPlane{}, byAnnotation).
		// A teardown waiting for the cluster's NodePools hears each go.
		Watches(&hyperv1.NodePool{}, handler.EnqueueRequestsFromMapFunc(clusterOfNodePool), builder.WithPredicates(onlyDeletes)).
		// Every HostedCluster that maps to a namespace hears of it: the one
		// refused because another owns it learns when it is gone.
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.clustersOfNamespace)).
		Watches(&appsv1.Deployment{}, byAnnotation, builder.WithPredicates(inControlPlaneNamespace)).
		Watches(&appsv1.DaemonSet{}, byAnnotation, builder.WithPredicates(inControlPlaneNamespace)).
		// A budget's status changes with every pod the disruption
		// controller counts; only a changed spec or a deletion needs repair.
		Watches(&policyv1.PodDisruptionBudget{}, byAnnotation, builder.WithPredicates(inControlPlaneNamespace, predicate.GenerationChangedPredicate{})).
		Watches(&corev1.ServiceAccount{}, byAnnotation, builder.WithPredicates(inControlPlaneNamespace)).
		Watches(&corev1.Secret{}, byAnnotation, builder.WithPredicates(inControlPlaneNamespace)).
		Watches(&rbacv1.Role{}, byAnnotation, builder.WithPredicates(inControlPlaneNamespace)).
		Watches(&rbacv1.RoleBinding{}, byAnnotation, builder.WithPredicates(inControlPlaneNamespace)).
		Watches(&rbacv1.ClusterRoleBinding{}, byAnnotation, builder.WithPredicates(inControlPlaneNamespace)).
		Watches(&corev1.Service{}, byAnnotation, builder.WithPredicates(inControlPlaneNamespace)).
		Watches(&networkingv1.NetworkPolicy{}, byAnnotation, builder.WithPredicates(inControlPlaneNamespace)).
		Watches(&admissionregistrationv1.ValidatingAdmissionPolicyBinding{}, byAnnotation, builder.WithPredicates(inControlPlaneNamespace)).
		// LeaderFencing on every HostedCluster follows the cluster-scoped
		// fencing objects.
		Watches(&admissionregistrationv1.ValidatingAdmissionPolicy{}, handler.EnqueueRequestsFromMapFunc(r.allClusters), builder.WithPredicates(isFencingObject)).
		Watches(&admissionregistrationv1.ValidatingAdmissionPolicyBinding{}, handler.EnqueueRequestsFromMapFunc(r.allClusters), builder.WithPredicates(isFencingObject)).
		Watches(&coordinationv1.Lease{}, r.leases.handler()).
		// A cluster waiting to restore from a backup hears it complete, and
		// its serving Job get ready or fail.
		Watches(&hyperv1.EtcdBackup{}, handler.EnqueueRequestsFromMapFunc(r.clustersRestoringFrom)).
		Watches(&batchv1.Job{}, handler.EnqueueRequestsFromMapFunc(clusterOfRestoreJob)).
		// A re-issued admin kubeconfig is copied again.
		// Through TermCache: these caches are not the manager's, whose
		// handlers the term removes.
		WatchesRawSource(source.Kind(leaderelection.TermCache(mgr, r.kubeconfigs), client.Object(&corev1.Secret{}), byAnnotation, inControlPlaneNamespace)).
		// A pull secret that appears or changes is read and copied again.
		WatchesRawSource(r.pullSecretSource(leaderelection.TermCache(mgr, r.pullSecrets))).
		Complete(r)
}

// clustersRestoringFrom maps an EtcdBackup to the HostedClusters of its
// namespace whose etcd restores from it.
func (r *Reconciler) clustersRestoringFrom(ctx context.Context, obj client.Object) []reconcile.Request {
	list := &hyperv1.HostedClusterList{}
	if err := r.Client.List(ctx, list, client.InNamespace(obj.GetNamespace())); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, hc := range list.Items {
		if from := hc.Spec.Etcd.RestoreFrom; from != nil && from.EtcdBackup.Name == obj.GetName() {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&hc)})
		}
	}
	return out
}

// clusterOfRestoreJob maps a restore's serving Job (owned by its
// HostedCluster) to that cluster.
func clusterOfRestoreJob(_ context.Context, obj client.Object) []reconcile.Request {
	owner := metav1.GetControllerOf(obj)
	if owner == nil || owner.Kind != "HostedCluster" || owner.APIVersion != hyperv1.GroupVersion.String() {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: owner.Name}}}
}

// kubeconfigSources is a cache of the Secrets in which the
// control-plane-operators publish their admin kubeconfigs (by name: the
// manager's cache shows only the Secrets the HO writes), started with the
// manager's caches whether or not this replica leads.
func kubeconfigSources(mgr ctrl.Manager) (cache.Cache, error) {
	return addStandbyCache(mgr, "admin kubeconfigs", map[client.Object]cache.ByObject{
		&corev1.Secret{}: {Field: fields.OneTermEqualSelector("metadata.name", hyperv1.AdminKubeconfigSecretName)},
	})
}

// addStandbyCache creates a cache of its own beside the manager's (what
// names it, for errors), restricted by byObject, and runs it with the
// manager's caches on every replica.
func addStandbyCache(mgr ctrl.Manager, what string, byObject map[client.Object]cache.ByObject) (cache.Cache, error) {
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		HTTPClient: mgr.GetHTTPClient(),
		Scheme:     mgr.GetScheme(),
		Mapper:     mgr.GetRESTMapper(),
		ByObject:   byObject,
	})
	if err != nil {
		return nil, fmt.Errorf("failed to create the cache of %s: %w", what, err)
	}
	if err := mgr.Add(standbyCache{c}); err != nil {
		return nil, fmt.Errorf("failed to add the cache of %s: %w", what, err)
	}
	return c, nil
}

// standbyCache runs a cache on every replica, as the manager runs its own.
type standbyCache struct{ cache.Cache }

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (standbyCache) NeedLeaderElection() bool { return false }

// clusterFromAnnotation maps an object the HO created to its HostedCluster.
func clusterFromAnnotation(_ context.Context, obj client.Object) []reconcile.Request {
	cluster, ok := render.ClusterOf(obj)
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: cluster}}
}

// clusterOfNodePool maps a NodePool to the HostedCluster it names.
func clusterOfNodePool(_ context.Context, obj client.Object) []reconcile.Request {
	np, ok := obj.(*hyperv1.NodePool)
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: np.Namespace, Name: np.Spec.ClusterName}}}
}

// notOnlyStatus drops the updates of a HostedCluster that change only its
// status (the HO's own status writes) and resourceVersion: a new
// generation (spec, deletion), labels, annotations, finalizers or owners
// pass.
var notOnlyStatus = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld, e.ObjectNew
		if o == nil || n == nil {
			return true
		}
		return o.GetGeneration() != n.GetGeneration() ||
			!o.GetDeletionTimestamp().Equal(n.GetDeletionTimestamp()) ||
			!maps.Equal(o.GetLabels(), n.GetLabels()) ||
			!maps.Equal(o.GetAnnotations(), n.GetAnnotations()) ||
			!slices.Equal(o.GetFinalizers(), n.GetFinalizers()) ||
			!equality.Semantic.DeepEqual(o.GetOwnerReferences(), n.GetOwnerReferences())
	},
}

// onlyDeletes passes deletions only.
var onlyDeletes = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	UpdateFunc:  func(event.UpdateEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return true },
}

// clustersOfNamespace maps a control-plane namespace to every HostedCluster
// whose control-plane namespace has its name.
func (r *Reconciler) clustersOfNamespace(ctx context.Context, obj client.Object) []reconcile.Request {
	list := &hyperv1.HostedClusterList{}
	if err := r.Client.List(ctx, list, client.MatchingFields{controlPlaneNamespaceIndex: obj.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to list the HostedClusters of a namespace", "namespace", obj.GetName())
		return nil
	}
	return requestsFor(list)
}

func requestsFor(list *hyperv1.HostedClusterList) []reconcile.Request {
	requests := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return requests
}

// allClusters maps an event to every HostedCluster.
func (r *Reconciler) allClusters(ctx context.Context, _ client.Object) []reconcile.Request {
	list := &hyperv1.HostedClusterList{}
	if err := r.Client.List(ctx, list); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to list HostedClusters")
		return nil
	}
	return requestsFor(list)
}

// isFencingObject passes events of the cluster-scoped fencing objects.
var isFencingObject = predicate.NewPredicateFuncs(func(obj client.Object) bool {
	for _, f := range fencing.Required() {
		if f.GetName() == obj.GetName() {
			return true
		}
	}
	return false
})

// clusterFromLease maps a CPO Lease to its HostedCluster through the
// control-plane namespace's annotation (client-go creates the Lease bare).
func (r *Reconciler) clusterFromLease(ctx context.Context, obj client.Object) []reconcile.Request {
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: obj.GetNamespace()}, ns); err != nil {
		return nil
	}
	return clusterFromAnnotation(ctx, ns)
}

// inControlPlaneNamespace drops events of objects without the cluster
// annotation before they reach the queue.
var inControlPlaneNamespace = predicate.NewPredicateFuncs(func(obj client.Object) bool {
	_, ok := obj.GetAnnotations()[hyperv1.ClusterAnnotation]
	return ok
})

// leadershipChanged passes Lease events that change what status shows:
// creation, deletion, a new holder or a new transition count. A renewal,
// which only moves renewTime, passes nothing.
var leadershipChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		oldLease, ok1 := e.ObjectOld.(*coordinationv1.Lease)
		newLease, ok2 := e.ObjectNew.(*coordinationv1.Lease)
		if !ok1 || !ok2 {
			return true
		}
		return *leaderStatusOrEmpty(oldLease) != *leaderStatusOrEmpty(newLease)
	},
}

func leaderStatusOrEmpty(lease *coordinationv1.Lease) *hyperv1.ControlPlaneOperatorStatus {
	if status := leaderStatus(lease); status != nil {
		return status
	}
	return &hyperv1.ControlPlaneOperatorStatus{}
}
