package hostedcluster

import (
	"context"
	"fmt"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/render"
	"github.com/hypershift-le/hypershift/support/leasestate"
)

// Fence observation: LeaderFencing=True is not what the HO applied but what
// the API server is seen to do. One server-side dry-run write, as a
// control-plane-operator pod that no pod is named, must be refused by the
// fence, and the refusal names the holder the API server judges against:
// it must be the Lease's holder (whose writes the policy then admits). The
// probe runs when the policy, the binding or the holder changed, never on a
// renewal; a converged cluster costs no request. What a verdict was for is
// kept in status (verifiedFence), so that an HO that restarts or takes over
// does not probe again a fence nothing changed.
//
// A fence that judges against another holder is stale: the API server's
// Lease param cache stopped (see render.KeepAlivePolicy). The HO re-creates
// the binding once; if that does not help, it reports FenceWedged with what
// to do, since only an API server restart clears it.

const (
	// fenceProbePod is the pod name of the probe: no pod has it.
	fenceProbePod = "hypershift-operator-fence-probe"
	// fenceRecheck is how soon a fence not in force, or stale, is looked at
	// again.
	fenceRecheck = 2 * time.Second
	// maxNotInForceRecheck caps the delay between probes of a binding
	// that is not in force yet.
	maxNotInForceRecheck = 10 * time.Second
	// bindingSettle is how long after this process wrote a fencing
	// binding its first probe waits: the API server puts a binding in
	// force once its informer sees it and compiles it, which a probe sent
	// at once (in the pass that wrote it) finds undone nearly every time,
	// a wasted request and a recheck 2 s later. After a second most are
	// in force (those that are not are rechecked as before).
	bindingSettle = time.Second
)

// notInForceRecheck is how soon a binding found not in force for the n-th
// time in a row (n >= 1) is probed again: fenceRecheck, doubling up to
// maxNotInForceRecheck. A new binding is usually in force after the first
// recheck; one that is not (an API server that compiles bindings slowly,
// under load, with many bindings changing) costs a probe every 10s, not
// every 2s, and is still seen in force within 10s.
func notInForceRecheck(n int) time.Duration {
	d := fenceRecheck
	for i := 1; i < n && d < maxNotInForceRecheck; i++ {
		d *= 2
	}
	return min(d, maxNotInForceRecheck)
}

// fenceState is what the HO last observed of one namespace's fence.
type fenceState struct {
	// observed is the policy, binding and holder the last verdict was for.
	observed hyperv1.VerifiedFence
	verified bool
	// staleSince is when the fence was first seen judging against another
	// holder; recreated is set once the binding was re-created for it.
	staleSince time.Time
	recreated  bool
	// notInForce counts the probes in a row that found the binding not
	// in force yet, for this verdict.
	notInForce int
	// bindingWritten is when this process last created or changed the
	// binding.
	bindingWritten time.Time
}

// bindingWritten records that this process created or changed
// namespace's fencing binding at now. Like every field of a fenceState,
// it is written by the one pass of its HostedCluster that runs at a time.
func (f *fences) bindingWritten(namespace string, now time.Time) {
	f.get(namespace).bindingWritten = now
}

// fences holds a fenceState per control-plane namespace.
type fences struct {
	mu    sync.Mutex
	state map[string]*fenceState
}

func (f *fences) get(namespace string) *fenceState {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.state == nil {
		f.state = map[string]*fenceState{}
	}
	if f.state[namespace] == nil {
		f.state[namespace] = &fenceState{}
	}
	return f.state[namespace]
}

func (f *fences) forget(namespace string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.state, namespace)
}

// observeFencing records LeaderFencing's value (s.fence) from what the API
// server does, when the HO fences this cluster and every fencing object
// exists.
func (r *Reconciler) observeFencing(ctx context.Context, s *scope, lease *coordinationv1.Lease) (ctrl.Result, error) {
	if !s.fenced {
		return ctrl.Result{}, nil
	}
	holder := leasestate.Holder(lease)
	observed, err := r.fenceObserved(ctx, s.namespace, holder)
	if err != nil {
		return ctrl.Result{}, err
	}
	state := r.fences.get(s.namespace)
	if state.observed == (hyperv1.VerifiedFence{}) && verifiedInStatus(s.original, observed) {
		// A verdict of an HO before this process, for the same objects
		// and holder.
		state.observed, state.verified = observed, true
	}
	if state.observed == observed && state.verified {
		setFenceVerified(s, observed)
		return ctrl.Result{}, nil
	}
	if state.observed != observed {
		state.observed, state.verified, state.notInForce = observed, false, 0
	}
	if r.Probe == nil {
		s.fence = &finding{metav1.ConditionUnknown, hyperv1.FenceUnverifiedReason, "The hypershift-operator has no way to probe the fence"}
		return ctrl.Result{}, nil
	}
	if wait := bindingSettle - r.now().Sub(state.bindingWritten); wait > 0 {
		s.fence = &finding{metav1.ConditionUnknown, hyperv1.FenceUnverifiedReason,
			"The fencing binding of " + s.namespace + " was just written; the hypershift-operator probes the fence once the API server has had a moment to put it in force"}
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	judged, err := r.Probe.Judge(ctx, s.namespace, fenceProbePod)
	switch {
	case err != nil:
		s.fence = &finding{metav1.ConditionUnknown, hyperv1.FenceUnverifiedReason, "Failed to probe the fence: " + err.Error()}
		return ctrl.Result{RequeueAfter: fenceRecheck}, nil
	case judged.Admitted:
		state.notInForce++
		s.fence = &finding{metav1.ConditionFalse, hyperv1.FenceNotInForceReason,
			"The API server admitted a write by a control-plane-operator pod that does not hold Lease " + s.namespace + "/" + hyperv1.ControlPlaneOperatorLeaseName + ": the fencing binding is not in force yet"}
		return ctrl.Result{RequeueAfter: notInForceRecheck(state.notInForce)}, nil
	case judged.Holder == holder:
		state.verified, state.staleSince, state.recreated, state.notInForce = true, time.Time{}, false, 0
		setFenceVerified(s, observed)
		return ctrl.Result{}, nil
	}
	return r.fenceStale(ctx, s, state, holder, judged.Holder)
}

// fenceObserved identifies what a verdict is for: the policy, the binding
// (both from the cache, by uid and generation: what the API server
// enforces changes only with their specs) and the holder.
func (r *Reconciler) fenceObserved(ctx context.Context, namespace, holder string) (hyperv1.VerifiedFence, error) {
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: render.FencingPolicyName}, policy); err != nil {
		return hyperv1.VerifiedFence{}, fmt.Errorf("failed to get the fencing policy: %w", err)
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: render.FencingBindingName(namespace)}, binding); err != nil {
		return hyperv1.VerifiedFence{}, fmt.Errorf("failed to get the fencing binding: %w", err)
	}
	return hyperv1.VerifiedFence{
		PolicyUID:         string(policy.UID),
		PolicyGeneration:  policy.Generation,
		BindingUID:        string(binding.UID),
		BindingGeneration: binding.Generation,
		HolderIdentity:    holder,
	}, nil
}

// verifiedInStatus reports whether hc's status says LeaderFencing was
// verified for observed.
func verifiedInStatus(hc *hyperv1.HostedCluster, observed hyperv1.VerifiedFence) bool {
	return hc.Status.VerifiedFence != nil && *hc.Status.VerifiedFence == observed &&
		meta.IsStatusConditionTrue(hc.Status.Conditions, hyperv1.LeaderFencing)
}

// fenceStale handles a fence that judges against fenced while the Lease
// names holder: a cache that lags shows it once; a stopped param cache
// shows it again after a moment, and again after the binding is
// re-created.
func (r *Reconciler) fenceStale(ctx context.Context, s *scope, state *fenceState, holder, fenced string) (ctrl.Result, error) {
	live := &coordinationv1.Lease{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: hyperv1.ControlPlaneOperatorLeaseName}, live); err == nil && leasestate.Holder(live) == fenced {
		// The HO's cache lags behind the API server: look again shortly.
		return ctrl.Result{RequeueAfter: fenceRecheck}, nil
	}
	message := fmt.Sprintf("The API server fences control-plane-operator writes against holder %q while Lease %s/%s names %q: its Lease param cache is stale (kubernetes/kubernetes#130887)",
		fenced, s.namespace, hyperv1.ControlPlaneOperatorLeaseName, holder)
	now := r.now()
	switch {
	case state.staleSince.IsZero():
		state.staleSince = now
		s.fence = &finding{metav1.ConditionFalse, hyperv1.FenceStaleReason, message}
		return ctrl.Result{RequeueAfter: fenceRecheck}, nil
	case now.Sub(state.staleSince) < fenceRecheck:
		return ctrl.Result{RequeueAfter: fenceRecheck - now.Sub(state.staleSince)}, nil
	case !state.recreated:
		state.recreated = true
		s.fence = &finding{metav1.ConditionFalse, hyperv1.FenceStaleReason, message + "; re-creating the fencing binding"}
		r.Recorder.Eventf(s.hc, nil, corev1.EventTypeWarning, hyperv1.FenceStaleReason, "RecreateFencingBinding", "%s; re-creating the fencing binding", message)
		binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: render.FencingBindingName(s.namespace)}}
		if err := r.Client.Delete(ctx, binding); err != nil && !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("failed to re-create the fencing binding: %w", err)
		}
		return ctrl.Result{RequeueAfter: fenceRecheck}, nil
	}
	wedged := message + "; re-creating the fencing binding did not help. Until the kube-apiserver is restarted, the holder's writes are refused: restart the kube-apiserver to clear its cache"
	before := meta.FindStatusCondition(s.original.Status.Conditions, hyperv1.LeaderFencing)
	s.fence = &finding{metav1.ConditionFalse, hyperv1.FenceWedgedReason, wedged}
	if before == nil || before.Reason != hyperv1.FenceWedgedReason {
		r.Recorder.Eventf(s.hc, nil, corev1.EventTypeWarning, hyperv1.FenceWedgedReason, "ProbeFence", "%s", wedged)
	}
	// The verdict stands until the policy, the binding or the holder
	// change; a slow look keeps it honest meanwhile.
	return ctrl.Result{RequeueAfter: refusalRecheck}, nil
}

// setFenceVerified records that the fence is seen to hold for the objects
// and the holder of verdict.
func setFenceVerified(s *scope, verdict hyperv1.VerifiedFence) {
	holder := verdict.HolderIdentity
	s.verifiedFence = &verdict
	message := "The API server refuses writes by control-plane-operator pods other than the holder of Lease " + s.namespace + "/" + hyperv1.ControlPlaneOperatorLeaseName
	if holder == "" {
		message = "The API server refuses every control-plane-operator write until a pod holds Lease " + s.namespace + "/" + hyperv1.ControlPlaneOperatorLeaseName
	}
	s.fence = &finding{metav1.ConditionTrue, hyperv1.AsExpectedReason, message}
}
