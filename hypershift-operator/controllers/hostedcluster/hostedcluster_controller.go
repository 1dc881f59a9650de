// Package hostedcluster is the hypershift-operator's HostedCluster
// controller: for each HostedCluster it pins the release payload it reads
// by digest (a tag that moves is reported, and rolls out only once the
// user accepts it), applies the control-plane namespace,
// the HostedControlPlane and a control-plane-operator rendered with leader
// election (and, on request, its metrics Service and ServiceMonitor),
// copies the hosted cluster's admin kubeconfig next to the HostedCluster,
// reports status (the CPO Lease's holder, the API endpoint
// and the kubeconfig among it), and tears it all down in order on delete.
//
// Each pass runs phases in order over a scope (hostedcluster_controller_scope.go): a phase records
// what it found there (a finding, a blocker that stops the pass, a
// refusal, its error) and never sets a condition. Once the phases ran, the
// pass observes the control plane it claimed; status is computed once,
// when the pass ends (computeStatus), and the pass's exit (exit) follows
// from the same facts.
//
// Secrets are read three ways, none of them a cache of every Secret of the
// management cluster: the Secrets a HostedCluster names (its pull secret,
// its encryption keys) through userSecrets, past the cache once per change
// of their metadata (pullSecretSources watches only metadata); the copies
// the HO writes into control-plane namespaces from the manager's cache,
// which holds only those (secretCopies, read by the applier through
// secretCopiesFirst); the hosted cluster's admin kubeconfig from a cache of
// its own (kubeconfigSources). The manager's client reads any other Secret
// past the cache (ClientOptions).
package hostedcluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/nodeheartbeat"
	"github.com/hypershift-le/hypershift/hypershift-operator/render"
	"github.com/hypershift-le/hypershift/support/apply"
	"github.com/hypershift-le/hypershift/support/config"
	"github.com/hypershift-le/hypershift/support/leaderelection"
	"github.com/hypershift-le/hypershift/support/releaseinfo"
)

const (
	// FieldOwner is the server-side apply field manager of the HO.
	FieldOwner = "hypershift-operator"
	// pauseFieldOwner owns spec.pausedUntil of HostedControlPlanes, so the
	// HO can set it while it leaves the rest of a paused spec alone.
	pauseFieldOwner = "hypershift-operator-pause"

	// DefaultTeardownTimeout is how long the HO waits for a
	// control-plane-operator to finalize its HostedControlPlane, while none
	// holds a valid Lease, before it finishes the teardown itself.
	DefaultTeardownTimeout = 2 * time.Minute
)

// Reconciler reconciles HostedClusters.
type Reconciler struct {
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
	// APIReader reads what the cache does not hold (Secrets).
	APIReader client.Reader
	// Releases resolves release payloads.
	Releases releaseinfo.Provider
	// DefaultControlPlaneOperatorImage is used when neither the annotation
	// nor the release payload names a CPO image.
	DefaultControlPlaneOperatorImage string
	// ControlPlaneOperatorTimings are the CPO leader-election timings
	// rendered into its args; valid (config.Timings.Validate).
	ControlPlaneOperatorTimings config.Timings
	// InsecureRegistries are the registry hosts Releases reaches over
	// plain HTTP, passed on to the control-plane-operator.
	InsecureRegistries []string
	// Isolation is where the management cluster's addresses are: with
	// them, every control-plane namespace gets the NetworkPolicies of
	// render.NetworkPolicies.
	Isolation render.Isolation
	// Recorder emits events on HostedClusters.
	Recorder events.EventRecorder
	// Clock is the time source; tests may replace it.
	Clock clock.PassiveClock
	// TeardownTimeout bounds the wait for a CPO to finalize its
	// HostedControlPlane; zero means DefaultTeardownTimeout.
	TeardownTimeout time.Duration
	// Fencing says whether the API server is to refuse writes by CPO pods
	// that do not hold the Lease.
	Fencing Fencing
	// Probe observes the fence (see fence_observation.go).
	Probe FenceProbe
	// ReleaseRecheckInterval is how often the registry is asked again which
	// payload a spec.release.image tag names, to notice a tag that moved;
	// zero means DefaultReleaseRecheckInterval.
	ReleaseRecheckInterval time.Duration
	// EnableMonitoring renders, in every control-plane namespace, a
	// metrics Service and a Prometheus Operator ServiceMonitor for the
	// control-plane-operator.
	EnableMonitoring bool
	// Heartbeats tracks the kubelets' heartbeats: a control plane that
	// runs only on lost nodes is reported unavailable. Nil turns that off.
	Heartbeats *nodeheartbeat.Tracker
	// MaxConcurrentReconciles is how many HostedClusters are reconciled at
	// once; zero means config.DefaultMaxConcurrentReconciles.
	MaxConcurrentReconciles int
	// Shard, when a part, limits the controller to the HostedClusters of
	// that shard (shard.go).
	Shard leaderelection.Shard
	// Elected says the HO runs under its Lease (--leader-elect): with
	// fencing, the API server then judges its writes by the Lease of the
	// shard a HostedCluster belongs to, the HO's own Lease for the whole
	// (operatorShard).
	Elected bool

	fences fences
	// lostNodes remembers the HostedClusters reported because of each lost
	// node.
	lostNodes lostNodeClusters
	leases    *leaseClock
	// waits spaces the passes of HostedClusters that wait on their user
	// (waitBackoff).
	waits *waitBackoff
	// reported holds, by "<HostedCluster UID>/<condition>", the reason and
	// message reportCondition last reported, and the resourceVersion of the
	// copy that pass started from; for WritesFenced, the HostedControlPlane
	// condition's message reportFencedWrites last relayed.
	reported sync.Map
	// statusWrites keeps a pass from starting from a cached copy that
	// predates this process's last status write.
	statusWrites statusWrites
	// kubeconfigs caches the Secrets in which the control-plane-operators
	// publish their admin kubeconfigs (SetupCaches).
	kubeconfigs cache.Cache
	// pullSecrets caches the metadata of Secrets, to hear of the pull
	// secrets HostedClusters name (SetupCaches).
	pullSecrets cache.Cache
	// secrets reads the Secrets HostedClusters name once per change
	// (SetupCaches).
	secrets *userSecrets
	// cache is the manager's cache, which holds the Secrets the HO copies
	// (SetupCaches).
	cache client.Reader
}

// Reconcile brings the world in line with one HostedCluster. Each pass runs
// phases in order; status is computed once, when the pass ends, from what
// they found.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, reterr error) {
	hc := &hyperv1.HostedCluster{}
	if err := r.current(ctx, req.NamespacedName, hc); err != nil {
		if apierrors.IsNotFound(err) {
			r.waits.Forget(req)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	s := &scope{
		hc:        hc,
		original:  hc.DeepCopy(),
		namespace: hyperv1.ControlPlaneNamespace(hc.Namespace, hc.Name),
	}

	if !hc.DeletionTimestamp.IsZero() {
		r.waits.Forget(req)
		return r.reconcileDelete(ctx, s)
	}

	// The finalizer, and the operator shard label the shard's fence
	// selects the HostedCluster by, in one write.
	if !controllerutil.ContainsFinalizer(hc, hyperv1.Finalizer) || render.OperatorShardDiffers(hc, r.operatorShard()) {
		patch := client.MergeFromWithOptions(hc.DeepCopy(), client.MergeFromWithOptimisticLock{})
		controllerutil.AddFinalizer(hc, hyperv1.Finalizer)
		render.SetOperatorShard(hc, r.operatorShard())
		if err := r.Client.Patch(ctx, hc, patch); err != nil {
			return ctrl.Result{}, fmt.Errorf("failed to add finalizer: %w", err)
		}
		s.original = hc.DeepCopy()
	}

	defer func() {
		r.computeStatus(ctx, s)
		if err := r.patchStatus(ctx, s); err != nil {
			reterr = errors.Join(reterr, err)
		} else if restoredThisPass(s) {
			// The restore's clean-up runs in a pass that starts from this
			// status, and the HO's own status writes start no pass.
			result = earliest(result, ctrl.Result{RequeueAfter: time.Second})
		}
	}()

	if paused, until := r.paused(s); paused {
		return r.reconcilePaused(ctx, s, until)
	}
	result, err := r.reconcileNormal(ctx, s)
	s.err = err
	// Status follows the world even when a phase failed: a rollout that
	// could not be applied must not look rolled out.
	if s.claimed {
		var observed ctrl.Result
		observed, s.observeErr = r.observe(ctx, s)
		result = earliest(result, observed)
	}
	return r.exit(req, s, result, s.failure())
}

// reconcileNormal runs the phases in order; each may stop the pass.
func (r *Reconciler) reconcileNormal(ctx context.Context, s *scope) (ctrl.Result, error) {
	phases := []func(context.Context, *scope) (ctrl.Result, error){
		r.reconcileRelease,
		r.reconcileNodePort,
		// Before the namespace: a cluster restored from a backup that is
		// missing or refused creates nothing.
		r.reconcileRestore,
		r.reconcileNamespace,
		r.reconcileControlPlane,
		r.reconcileKubeconfig,
		// Last: its retry while the ServiceMonitor CRD is missing stops
		// nothing.
		r.reconcileMonitoring,
	}
	for _, phase := range phases {
		result, err := phase(ctx, s)
		if err != nil || !result.IsZero() || s.stopped() {
			return result, err
		}
	}
	return ctrl.Result{}, nil
}

// exit decides from what the pass found when the next one runs, and
// whether the pass fails. A refusal is looked at again only now and then; a
// pass that waits on the HostedCluster's user is retried with waitBackoff's
// delays (or only on a change), without an error log: its condition says
// what to do, once. Otherwise the pass's error is returned, and a pass that
// succeeded looks at the release tag again later.
func (r *Reconciler) exit(req ctrl.Request, s *scope, result ctrl.Result, err error) (ctrl.Result, error) {
	switch {
	case s.refusal != nil:
		return ctrl.Result{RequeueAfter: refusalRecheck}, nil
	case s.blocked != nil && s.blocked.wait == waitsForChange:
		return result, nil
	case s.blocked != nil && s.blocked.wait == waitsOnUser:
		return earliest(result, ctrl.Result{RequeueAfter: r.waits.When(req)}), nil
	}
	r.waits.Forget(req)
	if err == nil {
		result = earliest(result, r.releaseRecheck(s))
	}
	return result, err
}

// patchStatus writes the status when, and only when, it changed. It is an
// update, not a merge patch: the history's completionTime is required but
// null while a rollout runs, and a merge patch would drop the null.
// The update is guarded by resourceVersion; a conflict retries the pass.
// Once the status is written, the pass's reports are made.
func (r *Reconciler) patchStatus(ctx context.Context, s *scope) error {
	before := &s.original.Status
	if s.written != nil {
		before = s.written
	}
	if !equality.Semantic.DeepEqual(*before, s.hc.Status) {
		if err := r.Client.Status().Update(ctx, s.hc); err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("failed to update status: %w", err)
		}
		r.statusWrites.wrote(s.hc)
	}
	for _, report := range s.reports {
		report()
	}
	return nil
}

// earliest merges two results: requeue at the earlier time.
func earliest(a, b ctrl.Result) ctrl.Result {
	if a.RequeueAfter == 0 || (b.RequeueAfter > 0 && b.RequeueAfter < a.RequeueAfter) {
		return b
	}
	return a
}

// applier applies the HO's objects; it reads the live Secret copies from
// the manager's cache (secretCopiesFirst).
func (r *Reconciler) applier() apply.Applier {
	return apply.Applier{Client: r.Client, Reader: secretCopiesFirst{cache: r.cache, client: r.Client}, FieldOwner: FieldOwner}
}

// applierIn is applier for the objects of s's control-plane namespace: in
// a namespace this pass created, a Secret the cache does not show does not
// exist, and is not read from the API server.
func (r *Reconciler) applierIn(s *scope) apply.Applier {
	a := r.applier()
	if s.namespaceCreated {
		a.Reader = secretCopiesFirst{cache: r.cache, client: r.Client, created: s.namespace}
	}
	return a
}

func (r *Reconciler) now() time.Time {
	if r.Clock == nil {
		return time.Now()
	}
	return r.Clock.Now()
}

func (r *Reconciler) teardownTimeout() time.Duration {
	if r.TeardownTimeout <= 0 {
		return DefaultTeardownTimeout
	}
	return r.TeardownTimeout
}
