package hostedcluster

import (
	"context"
	"fmt"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
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
// probe runs when the policy, the shared binding or the holder changed, or
// the namespace's fencing label was just written, never on a
// renewal; a converged cluster costs no request. What a verdict was for is
// kept in status (verifiedFence), so that an HO that restarts or takes over
// does not probe again a fence nothing changed.
//
// A fence that judges against another holder is stale: the API server's
// Lease param cache stopped (see render.KeepAlivePolicy). The HO reports
// FenceStale, looks again a moment later (a cache that lags catches up),
// and then reports FenceWedged with what to do, since only an API server
// restart clears it. It does not re-create the binding: one binding fences
// every control-plane namespace, and deleting it would unfence them all
// for a remedy that does not restart a stopped cache.
//
// A binding of the namespace alone, which an earlier version applied, is
// deleted once the fence is seen to hold and the shared binding is known to
// be in force there too: a probe's refusal names it (the API server names
// the first binding that refused, in an order it keeps until its bindings
// change, so a refusal may name the old binding every time), or the shared
// binding and the namespace's label have been in place for
// maxNotInForceRecheck, longer than the API server takes to put a binding
// in force but under load. The fence is then probed again without it: a
// shared binding not in force is reported (FenceNotInForce) like a new
// one.

const (
	// fenceProbePod is the pod name of the probe: no pod has it.
	fenceProbePod = "hypershift-operator-fence-probe"
	// fenceRecheck is how soon a fence not in force, or stale, is looked at
	// again.
	fenceRecheck = 2 * time.Second
	// maxNotInForceRecheck caps the delay between probes of a binding
	// that is not in force yet.
	maxNotInForceRecheck = 10 * time.Second
	// bindingSettle is how long after this process wrote what selects a
	// namespace for the fence (its label, or deleted a binding) its first
	// probe waits: the API server puts a binding in force for a namespace
	// once its informers see both and it compiles the binding, which a
	// probe sent at once (in the pass that wrote it) finds undone nearly
	// every time, a wasted request and a recheck 2 s later. After a
	// second most are in force (those that are not are rechecked as
	// before).
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
	// holder.
	staleSince time.Time
	// rewritten is set when this process changed what fences the
	// namespace since the last verdict: a verdict kept in status is not
	// trusted then, and the fence is probed again.
	rewritten bool
	// notInForce counts the probes in a row that found the binding not
	// in force yet, for this verdict.
	notInForce int
	// fenceWritten is when this process last changed what fences the
	// namespace: its fencing label, or a binding of it alone.
	fenceWritten time.Time
}

// fenceWritten records that this process changed, at now, what fences
// namespace. Like every field of a fenceState, it is written by the one
// pass of its HostedCluster that runs at a time.
func (f *fences) fenceWritten(namespace string, now time.Time) {
	state := f.get(namespace)
	state.fenceWritten, state.verified, state.rewritten = now, false, true
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
	observed, err := r.fenceObserved(ctx, holder)
	if err != nil {
		return ctrl.Result{}, err
	}
	state := r.fences.get(s.namespace)
	if state.observed == (hyperv1.VerifiedFence{}) && !state.rewritten && verifiedInStatus(s.original, observed) {
		// A verdict of an HO before this process, for the same objects
		// and holder.
		state.observed, state.verified = observed, true
	}
	if state.observed == observed && state.verified {
		return r.fenceHolds(ctx, s, state, observed, "")
	}
	if state.observed != observed {
		state.observed, state.verified, state.notInForce = observed, false, 0
	}
	if r.Probe == nil {
		s.fence = &finding{metav1.ConditionUnknown, hyperv1.FenceUnverifiedReason, "The hypershift-operator has no way to probe the fence"}
		return ctrl.Result{}, nil
	}
	if wait := bindingSettle - r.now().Sub(state.fenceWritten); wait > 0 {
		s.fence = &finding{metav1.ConditionUnknown, hyperv1.FenceUnverifiedReason,
			"What fences " + s.namespace + " was just written; the hypershift-operator probes the fence once the API server has had a moment to put it in force"}
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
		state.verified, state.staleSince, state.rewritten, state.notInForce = true, time.Time{}, false, 0
		return r.fenceHolds(ctx, s, state, observed, judged.Binding)
	}
	return r.fenceStale(ctx, s, state, holder, judged.Holder)
}

// fenceObserved identifies what a verdict is for: the policy, the shared
// binding (both from the cache, by uid and generation: what the API server
// enforces changes only with their specs) and the holder.
func (r *Reconciler) fenceObserved(ctx context.Context, holder string) (hyperv1.VerifiedFence, error) {
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: render.FencingPolicyName}, policy); err != nil {
		return hyperv1.VerifiedFence{}, fmt.Errorf("failed to get the fencing policy: %w", err)
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: render.FencingBindingName}, binding); err != nil {
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
// shows it again after a moment.
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
		s.fence = &finding{metav1.ConditionFalse, hyperv1.FenceStaleReason, message + "; looking again in " + fenceRecheck.String()}
		r.Recorder.Eventf(s.hc, nil, corev1.EventTypeWarning, hyperv1.FenceStaleReason, "ProbeFence", "%s; looking again in %s", message, fenceRecheck)
		return ctrl.Result{RequeueAfter: fenceRecheck}, nil
	case now.Sub(state.staleSince) < fenceRecheck:
		return ctrl.Result{RequeueAfter: fenceRecheck - now.Sub(state.staleSince)}, nil
	}
	wedged := message + ", still " + now.Sub(state.staleSince).Round(time.Second).String() + " after it was first seen. Until the kube-apiserver is restarted, the holder's writes are refused: restart the kube-apiserver to clear its cache"
	before := meta.FindStatusCondition(s.original.Status.Conditions, hyperv1.LeaderFencing)
	s.fence = &finding{metav1.ConditionFalse, hyperv1.FenceWedgedReason, wedged}
	if before == nil || before.Reason != hyperv1.FenceWedgedReason {
		r.Recorder.Eventf(s.hc, nil, corev1.EventTypeWarning, hyperv1.FenceWedgedReason, "ProbeFence", "%s", wedged)
	}
	// The verdict stands until the policy, the binding or the holder
	// change; a slow look keeps it honest meanwhile.
	return ctrl.Result{RequeueAfter: refusalRecheck}, nil
}

// fenceHolds records a fence seen to hold for verdict (judgedBy names the
// binding whose refusal the probe got, "" for a verdict not probed in this
// pass). A binding of the namespace alone that an earlier version left is
// deleted once the shared binding is known to be in force, and the fence
// probed again; until then the fence holds, by that binding at least.
func (r *Reconciler) fenceHolds(ctx context.Context, s *scope, state *fenceState, verdict hyperv1.VerifiedFence, judgedBy string) (ctrl.Result, error) {
	legacy, err := r.cachedNamespaceFencingBindings(ctx, s.namespace)
	if err != nil {
		return ctrl.Result{}, err
	}
	setFenceVerified(s, verdict)
	if len(legacy) == 0 {
		return ctrl.Result{}, nil
	}
	if judgedBy != render.FencingBindingName {
		wait, err := r.sharedFenceSettles(ctx, state)
		if err != nil || wait > 0 {
			return ctrl.Result{RequeueAfter: wait}, err
		}
	}
	s.fence = &finding{metav1.ConditionUnknown, hyperv1.FenceUnverifiedReason,
		"The fencing binding of " + s.namespace + " alone, from an earlier version, is deleted: the hypershift-operator probes the fence the shared binding puts in force"}
	s.verifiedFence = nil
	state.notInForce = 0
	if err := r.deleteBindings(ctx, legacy); err != nil {
		return ctrl.Result{}, err
	}
	r.fences.fenceWritten(s.namespace, r.now())
	return ctrl.Result{RequeueAfter: bindingSettle}, nil
}

// sharedFenceSettles is how long it is until the shared fencing binding
// and the namespace's label (as far as this process wrote it) have been in
// place for maxNotInForceRecheck.
func (r *Reconciler) sharedFenceSettles(ctx context.Context, state *fenceState) (time.Duration, error) {
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: render.FencingBindingName}, binding); err != nil {
		return 0, fmt.Errorf("failed to get the fencing binding: %w", err)
	}
	now := r.now()
	since := binding.CreationTimestamp.Time
	if state.fenceWritten.After(since) {
		since = state.fenceWritten
	}
	return max(0, maxNotInForceRecheck-now.Sub(since)), nil
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
