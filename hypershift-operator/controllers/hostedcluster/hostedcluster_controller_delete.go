package hostedcluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/rbac"
	"github.com/hypershift-le/hypershift/hypershift-operator/render"
	"github.com/hypershift-le/hypershift/support/leasestate"
)

// The reasons of the teardown's events, one per step.
const (
	DeletingNodePoolsReason    = "DeletingNodePools"
	DeletingClusterAPIReason   = "DeletingClusterAPICluster"
	DeletingControlPlaneReason = "DeletingHostedControlPlane"
	DeletingNamespaceReason    = "DeletingControlPlaneNamespace"
	TornDownReason             = "TornDown"
)

// teardownPoll is how often an unfinished teardown is looked at again when
// no watch event is expected to wake it.
const teardownPoll = 5 * time.Second

// reconcileDelete tears the control plane down in order: the
// HostedControlPlane first (its CPO finalizes it, deleting the components),
// then the control-plane namespace (with the etcd claims, the data), then
// the admin kubeconfig copy, then the HostedCluster's finalizer.
func (r *Reconciler) reconcileDelete(ctx context.Context, s *scope) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(s.hc, hyperv1.Finalizer) {
		return ctrl.Result{}, nil
	}
	// A HostedCluster whose namespace belongs to another one has nothing
	// to tear down: everything in that namespace is the other's.
	owned, err := r.ownsNamespace(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	if owned {
		if done, result, err := r.teardown(ctx, s); !done || err != nil {
			return result, err
		}
		r.fences.forget(s.namespace)
		if err := r.deleteKubeconfig(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
	}
	// A pass that started from a cached copy older than the previous
	// pass's finalizer removal would remove it (and report it) again: the
	// finalizer is removed from what the API server holds.
	live := &hyperv1.HostedCluster{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(s.hc), live); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !controllerutil.ContainsFinalizer(live, hyperv1.Finalizer) {
		return ctrl.Result{}, nil
	}
	patch := client.MergeFromWithOptions(live.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(live, hyperv1.Finalizer)
	if err := r.Client.Patch(ctx, live, patch); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("failed to remove finalizer: %w", err)
	}
	ctrl.LoggerFrom(ctx).Info("Control plane torn down")
	r.forgetReports(s.hc)
	r.statusWrites.forget(s.hc.UID)
	if owned {
		r.Recorder.Eventf(s.hc, nil, corev1.EventTypeNormal, TornDownReason, "Teardown", "Control plane torn down: control-plane namespace %s deleted", s.namespace)
	}
	return ctrl.Result{}, nil
}

// forgetReports drops what reportCondition remembers of hc, whatever the
// condition.
func (r *Reconciler) forgetReports(hc *hyperv1.HostedCluster) {
	prefix := string(hc.UID) + "/"
	r.reported.Range(func(key, _ any) bool {
		if strings.HasPrefix(key.(string), prefix) {
			r.reported.Delete(key)
		}
		return true
	})
}

// teardown removes, in order, the cluster's NodePools, the
// HostedControlPlane, any fencing binding of its namespace alone, the CPO's
// auth-delegator ClusterRoleBinding and the control-plane namespace, and
// reports when all are gone.
func (r *Reconciler) teardown(ctx context.Context, s *scope) (bool, ctrl.Result, error) {
	// The pools go first, while the control plane runs: their machines
	// leave a hosted cluster that can still drain them, and their tokens
	// leave it through a control-plane-operator that still acts.
	if done, result, err := r.deleteNodePools(ctx, s); !done || err != nil {
		return false, result, err
	}
	// Platform Pod: cluster-api's Cluster next, while its manager runs (the
	// namespace's deletion would take the manager before its objects).
	if done, result, err := r.deleteClusterAPICluster(ctx, s); !done || err != nil {
		return false, result, err
	}
	if done, result, err := r.deleteHostedControlPlane(ctx, s); !done || err != nil {
		return false, result, err
	}
	// The shared fencing bindings judge the namespace until it is gone (the
	// namespace controller removes the Leases among everything else, and a
	// write whose param is not found is not judged). Bindings of this
	// namespace alone, left by an earlier version, are cluster-scoped: the
	// namespace's deletion would leave them behind.
	if err := r.deleteNamespaceFencingBindings(ctx, s.namespace, s.key()); err != nil {
		return false, ctrl.Result{}, err
	}
	// Cluster-scoped: the namespace's deletion would leave them behind.
	if err := r.deleteAuthDelegator(ctx, s.namespace, s.key()); err != nil {
		return false, ctrl.Result{}, err
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: render.ClusterAPIBindingName(s.namespace)}}
	if err := r.deleteClusterScoped(ctx, binding, "ClusterRoleBinding (the cluster-api manager's "+rbac.ClusterAPIClusterRole+" binding)", s.key()); err != nil {
		return false, ctrl.Result{}, err
	}
	return r.deleteNamespace(ctx, s)
}

// deleteNodePools deletes the NodePools that name the HostedCluster and
// waits until their finalizers have let them go. The list is read from the
// API server: a pool the cache has not seen yet must not be left behind
// with a control plane gone under it.
func (r *Reconciler) deleteNodePools(ctx context.Context, s *scope) (bool, ctrl.Result, error) {
	pools := &hyperv1.NodePoolList{}
	if err := r.APIReader.List(ctx, pools, client.InNamespace(s.hc.Namespace)); err != nil {
		return false, ctrl.Result{}, fmt.Errorf("failed to list the NodePools of namespace %s: %w", s.hc.Namespace, err)
	}
	var deleting, waiting []string
	for i := range pools.Items {
		np := &pools.Items[i]
		if np.Spec.ClusterName != s.hc.Name {
			continue
		}
		waiting = append(waiting, np.Name)
		if !np.DeletionTimestamp.IsZero() {
			continue
		}
		if err := r.Client.Delete(ctx, np, client.Preconditions{UID: &np.UID}); err != nil && !apierrors.IsNotFound(err) {
			return false, ctrl.Result{}, fmt.Errorf("failed to delete NodePool %s/%s: %w", np.Namespace, np.Name, err)
		}
		deleting = append(deleting, np.Name)
	}
	if len(waiting) == 0 {
		return true, ctrl.Result{}, nil
	}
	if len(deleting) > 0 {
		r.Recorder.Eventf(s.hc, nil, corev1.EventTypeNormal, DeletingNodePoolsReason, "Teardown",
			"Deleting NodePools %s before the control plane: their machines leave the hosted cluster first", strings.Join(deleting, ", "))
	}
	// A pool's deletion wakes the teardown (the NodePool watch); the poll
	// bounds a missed event.
	return false, ctrl.Result{RequeueAfter: teardownPoll}, nil
}

// deleteClusterAPICluster deletes the cluster's cluster-api Cluster
// (platform Pod) and waits for it to go: its manager deletes what the
// Cluster references (the HostedControlPlane, whose control-plane-operator
// tears the control plane down, and the PodCluster), then lets it go. The
// machines are gone already, with the NodePools. Should the Cluster stay
// past the teardown timeout (no manager runs), the HO removes its
// finalizers, says so in an event, and goes on: the HostedControlPlane is
// deleted next anyway.
func (r *Reconciler) deleteClusterAPICluster(ctx context.Context, s *scope) (bool, ctrl.Result, error) {
	cluster := &clusterv1.Cluster{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: s.hc.Name}, cluster); err != nil {
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return true, ctrl.Result{}, nil
		}
		return false, ctrl.Result{}, fmt.Errorf("failed to get the cluster-api Cluster: %w", err)
	}
	if cluster.DeletionTimestamp.IsZero() {
		if err := r.Client.Delete(ctx, cluster); err != nil && !apierrors.IsNotFound(err) {
			return false, ctrl.Result{}, fmt.Errorf("failed to delete the cluster-api Cluster: %w", err)
		}
		r.Recorder.Eventf(s.hc, nil, corev1.EventTypeNormal, DeletingClusterAPIReason, "Teardown",
			"Deleting cluster-api Cluster %s/%s: its manager deletes the HostedControlPlane and the PodCluster it references", cluster.Namespace, cluster.Name)
		return false, ctrl.Result{RequeueAfter: teardownPoll}, nil
	}
	if waited := r.now().Sub(cluster.DeletionTimestamp.Time); waited < r.teardownTimeout() {
		return false, ctrl.Result{RequeueAfter: min(teardownPoll, r.teardownTimeout()-waited)}, nil
	}
	patch := client.MergeFrom(cluster.DeepCopy())
	cluster.Finalizers = nil
	if err := r.Client.Patch(ctx, cluster, patch); err != nil && !apierrors.IsNotFound(err) {
		return false, ctrl.Result{}, fmt.Errorf("failed to remove the cluster-api Cluster's finalizers: %w", err)
	}
	r.Recorder.Eventf(s.hc, nil, corev1.EventTypeWarning, "ClusterAPIUnavailable", "ForceTeardown",
		"No cluster-api manager let Cluster %s/%s go within %s; the hypershift-operator removed its finalizers and continues the teardown", cluster.Namespace, cluster.Name, r.teardownTimeout())
	return false, ctrl.Result{RequeueAfter: time.Second}, nil
}

// deleteAuthDelegator removes the CPO's auth-delegator ClusterRoleBinding
// of namespace, if there is one and it serves the HostedCluster clusterKey.
func (r *Reconciler) deleteAuthDelegator(ctx context.Context, namespace, clusterKey string) error {
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: render.AuthDelegatorBindingName(namespace)}}
	return r.deleteClusterScoped(ctx, binding, "ClusterRoleBinding (the control-plane-operator's "+rbac.AuthDelegatorClusterRole+" binding)", clusterKey)
}

// deleteHostedControlPlane deletes the HostedControlPlane and waits for it
// to go. When its finalizer stays past the teardown timeout while no CPO
// holds a valid Lease, no CPO can finalize it: the HO removes the finalizer
// itself and says so in an event.
func (r *Reconciler) deleteHostedControlPlane(ctx context.Context, s *scope) (bool, ctrl.Result, error) {
	hcp := &hyperv1.HostedControlPlane{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: s.hc.Name}, hcp); err != nil {
		if apierrors.IsNotFound(err) {
			return true, ctrl.Result{}, nil
		}
		return false, ctrl.Result{}, fmt.Errorf("failed to get HostedControlPlane: %w", err)
	}
	if hcp.DeletionTimestamp.IsZero() {
		if err := r.Client.Delete(ctx, hcp); err != nil && !apierrors.IsNotFound(err) {
			return false, ctrl.Result{}, fmt.Errorf("failed to delete HostedControlPlane: %w", err)
		}
		r.Recorder.Eventf(s.hc, nil, corev1.EventTypeNormal, DeletingControlPlaneReason, "Teardown",
			"Deleting HostedControlPlane %s/%s: its control-plane-operator removes the control plane's components", hcp.Namespace, hcp.Name)
		return false, ctrl.Result{RequeueAfter: r.teardownTimeout()}, nil
	}
	waited := r.now().Sub(hcp.DeletionTimestamp.Time)
	if waited < r.teardownTimeout() {
		return false, ctrl.Result{RequeueAfter: r.teardownTimeout() - waited}, nil
	}
	alive, err := r.controlPlaneOperatorAlive(ctx, s)
	if err != nil {
		return false, ctrl.Result{}, err
	}
	if alive {
		return false, ctrl.Result{RequeueAfter: teardownPoll}, nil
	}
	patch := client.MergeFrom(hcp.DeepCopy())
	hcp.Finalizers = nil
	if err := r.Client.Patch(ctx, hcp, patch); err != nil && !apierrors.IsNotFound(err) {
		return false, ctrl.Result{}, fmt.Errorf("failed to remove the HostedControlPlane's finalizers: %w", err)
	}
	r.Recorder.Eventf(s.hc, nil, corev1.EventTypeWarning, "ControlPlaneOperatorUnavailable", "ForceTeardown",
		"No control-plane-operator finalized HostedControlPlane %s/%s within %s and none holds the Lease; the hypershift-operator removed its finalizers and continues the teardown",
		hcp.Namespace, hcp.Name, r.teardownTimeout())
	return false, ctrl.Result{RequeueAfter: time.Second}, nil
}

// controlPlaneOperatorAlive reports whether a CPO may still hold the Lease:
// the Lease names a holder, and this process has not seen it go its lease
// duration without a change (leaseClock). The holder's renewTime is not
// judged: it is written on the holder's clock (see leasestate). A Lease
// this process has not seen yet counts as alive; the teardown waits.
func (r *Reconciler) controlPlaneOperatorAlive(ctx context.Context, s *scope) (bool, error) {
	lease := &coordinationv1.Lease{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: hyperv1.ControlPlaneOperatorLeaseName}, lease); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("failed to get the control-plane-operator Lease: %w", err)
	}
	if leasestate.Holder(lease) == "" {
		return false, nil
	}
	silent, _ := r.silentLease(lease)
	return !silent, nil
}

// deleteNamespace deletes the control-plane namespace and waits until the
// namespace controller has removed it and everything in it.
func (r *Reconciler) deleteNamespace(ctx context.Context, s *scope) (bool, ctrl.Result, error) {
	ns := &corev1.Namespace{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Name: s.namespace}, ns); err != nil {
		if apierrors.IsNotFound(err) {
			return true, ctrl.Result{}, nil
		}
		return false, ctrl.Result{}, fmt.Errorf("failed to get namespace %s: %w", s.namespace, err)
	}
	if ns.Annotations[hyperv1.ClusterAnnotation] != s.key() {
		// Not ours: never delete a namespace the HO did not create.
		return true, ctrl.Result{}, nil
	}
	if ns.DeletionTimestamp.IsZero() {
		if err := r.Client.Delete(ctx, ns); err != nil && !apierrors.IsNotFound(err) {
			return false, ctrl.Result{}, fmt.Errorf("failed to delete namespace %s: %w", s.namespace, err)
		}
		r.Recorder.Eventf(s.hc, nil, corev1.EventTypeNormal, DeletingNamespaceReason, "Teardown",
			"Deleting control-plane namespace %s with everything in it, etcd's data included", s.namespace)
	}
	return false, ctrl.Result{RequeueAfter: teardownPoll}, nil
}
