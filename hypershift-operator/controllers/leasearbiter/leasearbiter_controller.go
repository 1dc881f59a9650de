package leasearbiter

import (
	"context"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/nodeheartbeat"
	"github.com/hypershift-le/hypershift/hypershift-operator/render"
	"github.com/hypershift-le/hypershift/support/holderpod"
	"github.com/hypershift-le/hypershift/support/leaderelection"
	"github.com/hypershift-le/hypershift/support/leasestate"
)

const (
	// FieldOwner is the field manager of the controller's Lease updates.
	FieldOwner = "hypershift-operator-lease-arbiter"

	// TokenWindow bounds how long the API server still accepts the token of
	// a pod after the pod object is gone: kube-apiserver caches a
	// successful token authentication for 10 seconds (the default of its
	// token success cache), and looks the pod up in its informer, a moment
	// behind etcd. Measured on kube-apiserver 1.37.2: accepted about 5s
	// after a forced delete, refused with 401 from about 10s on
	// (test/fencing). Without a fence in force, the controller releases a
	// Lease only once the holder's pod object has been gone this long.
	TokenWindow = 15 * time.Second

	// conflictRecheck is how soon a Lease that changed under a release is
	// looked at again, when the change did not wake the controller (a
	// renewal by the gone holder's process, still running).
	conflictRecheck = 250 * time.Millisecond
)

// Reconciler releases control-plane-operator Leases whose holder's pod is
// gone; see the package documentation.
type Reconciler struct {
	// Client reads from the manager's cache and writes.
	Client client.Client
	// APIReader reads a holder's pod from the API server.
	APIReader client.Reader
	// Recorder records the releases on HostedClusters.
	Recorder events.EventRecorder
	// Fencing is true when the operator binds the fencing policy to
	// control-plane namespaces (--enable-fencing, on an API server that can
	// fence). Even then a namespace counts as fenced only while its
	// HostedCluster reports LeaderFencing=True.
	Fencing bool
	// Clock is the real clock when nil.
	Clock clock.PassiveClock
	// Heartbeats tracks the kubelets' heartbeats; when nil,
	// SetupWithManager makes one of its own, counting a node lost after
	// NodeLostAfter (nodeheartbeat.DefaultLostAfter when zero).
	Heartbeats    *nodeheartbeat.Tracker
	NodeLostAfter time.Duration
	// RestartGrace is how long a holder's container may read exited, its
	// pod running, before it counts as stopped; DefaultRestartGrace when
	// zero.
	RestartGrace time.Duration
	// Shard, when a part, limits the controller to the Leases of the
	// control planes of the HostedClusters of that shard
	// (leaderelection.AddShards).
	Shard leaderelection.Shard

	// heartbeats is Heartbeats, or the term's own tracker.
	heartbeats *nodeheartbeat.Tracker
	// lostNodes wakes the Leases whose holders run on a node that went
	// silent.
	lostNodes chan event.GenericEvent

	holders holders
	// released maps a Lease to the resourceVersion this arbiter released:
	// until the cache shows the write, a reconcile (another pod event, say)
	// still reads that version and must not write again, even if only to
	// be refused with a 409.
	released sync.Map

	// beforeRelease, in tests, runs between the read that named the gone
	// holder and the write that releases the Lease.
	beforeRelease func(ctx context.Context, lease *coordinationv1.Lease)
}

// Reconcile looks at one CPO Lease: when its holder's pod is gone, and the
// rules allow it, it clears the holder.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	lease := &coordinationv1.Lease{}
	if err := r.Client.Get(ctx, req.NamespacedName, lease); err != nil {
		r.holders.forget(req.NamespacedName)
		r.released.Delete(req.NamespacedName)
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	holder := leasestate.Holder(lease)
	if rv, ok := r.released.Load(req.NamespacedName); ok {
		if rv == lease.ResourceVersion {
			return ctrl.Result{}, nil // released already; the cache is behind
		}
		r.released.Delete(req.NamespacedName)
	}
	if holder == "" {
		r.holders.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	hc, err := r.hostedClusterOf(ctx, lease.Namespace)
	if err != nil || hc == nil {
		return ctrl.Result{}, err
	}
	if !r.Shard.Has(hyperv1.HostedClusterShardKey(hc.Namespace, hc.Name)) {
		// Let in while its namespace was not in the cache yet: another
		// shard's.
		return ctrl.Result{}, nil
	}
	if paused, until, err := hyperv1.ParsePausedUntil(hc.Spec.PausedUntil, r.now()); err == nil && paused {
		if until.IsZero() {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{RequeueAfter: until.Sub(r.now())}, nil
	}
	verdict, exists, err := r.judge(ctx, req.NamespacedName, holder)
	switch {
	case err != nil:
		return ctrl.Result{}, err
	case verdict.Stopped:
		return r.releaseIfStopped(ctx, hc, lease, holder, verdict.Reason)
	case !verdict.Gone && !verdict.ExitedAt.IsZero():
		// Not restarted at once: a back-off the kubelet has not reported.
		exited := r.now().Sub(verdict.ExitedAt)
		if left := r.restartGrace() - exited; left > 0 {
			return ctrl.Result{RequeueAfter: left}, nil
		}
		return r.releaseIfStopped(ctx, hc, lease, holder, fmt.Sprintf("%s for %s", holderpod.ReasonExited, exited.Round(time.Second)))
	case !verdict.Gone:
		return r.releaseIfNodeLost(ctx, hc, lease, holder)
	}
	wait, release, err := r.releaseAfter(ctx, hc, req.NamespacedName, holder, exists)
	switch {
	case err != nil:
		return ctrl.Result{}, err
	case wait > 0:
		return ctrl.Result{RequeueAfter: wait}, nil
	case !release:
		return ctrl.Result{}, nil
	}
	return r.release(ctx, hc, lease, "pod gone ("+verdict.Reason+")")
}

// hostedClusterOf returns the HostedCluster that owns control-plane
// namespace ns, or nil when ns is not a control-plane namespace claimed by
// an existing HostedCluster: nothing in it is the controller's business.
func (r *Reconciler) hostedClusterOf(ctx context.Context, ns string) (*hyperv1.HostedCluster, error) {
	namespace := &corev1.Namespace{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: ns}, namespace); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if namespace.Labels[hyperv1.HostedControlPlaneLabel] != "true" {
		return nil, nil
	}
	cluster, ok := render.ClusterOf(namespace)
	if !ok || hyperv1.ControlPlaneNamespace(cluster.Namespace, cluster.Name) != ns {
		return nil, nil
	}
	hc := &hyperv1.HostedCluster{}
	if err := r.Client.Get(ctx, cluster, hc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("failed to get HostedCluster %s: %w", cluster, err)
	}
	return hc, nil
}

// release clears the holder of lease with an update preconditioned on the
// resourceVersion of the read that named the gone holder, and records it
// with why.
func (r *Reconciler) release(ctx context.Context, hc *hyperv1.HostedCluster, lease *coordinationv1.Lease, why string) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	holder := leasestate.Holder(lease)
	if r.beforeRelease != nil {
		r.beforeRelease(ctx, lease)
	}
	released := lease.DeepCopy()
	now := metav1.NewMicroTime(r.now())
	// As the elector's own release: no holder, a lease of one second.
	released.Spec.HolderIdentity = ptr.To("")
	released.Spec.LeaseDurationSeconds = ptr.To(int32(1))
	released.Spec.AcquireTime, released.Spec.RenewTime = &now, &now
	err := r.Client.Update(ctx, released, client.FieldOwner(FieldOwner))
	switch {
	case apierrors.IsConflict(err):
		log.Info("Not releasing the Lease: it changed since it named the gone holder; looking again", "holder", holder)
		return ctrl.Result{RequeueAfter: conflictRecheck}, nil
	case apierrors.IsNotFound(err):
		return ctrl.Result{}, nil
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("failed to release Lease %s/%s: %w", lease.Namespace, lease.Name, err)
	}
	r.holders.forget(client.ObjectKeyFromObject(lease))
	r.released.Store(client.ObjectKeyFromObject(lease), lease.ResourceVersion)
	log.Info("Released the Lease: its holder cannot hold it", "holder", holder, "reason", why)
	r.Recorder.Eventf(hc, nil, corev1.EventTypeNormal, "LeaseReleased", "ReleaseLease",
		"Lease released for %s: %s", holder, why)
	return ctrl.Result{}, nil
}

func (r *Reconciler) restartGrace() time.Duration {
	if r.RestartGrace == 0 {
		return DefaultRestartGrace
	}
	return r.RestartGrace
}

func (r *Reconciler) now() time.Time {
	if r.Clock == nil {
		return time.Now()
	}
	return r.Clock.Now()
}
