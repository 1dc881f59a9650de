package hostedcontrolplane

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/apply"
)

// A refusal is an object of the control plane that the management cluster's
// API server refused for what it is (apply.Refused): a Service asking for a
// node port another Service holds or outside the cluster's range, an object
// an admission policy forbids. Sending it again cannot help until the
// HostedControlPlane or the management cluster changes, so the pass does
// not fail: it applies what it can, sets ValidConfiguration=False (and
// Available=False while the control plane does not serve) with the API
// server's words, records one Warning event per change, and looks again
// with a backoff (refusalRetries), so that the condition clears by itself
// once the cause is gone (the other Service deleted). A refusal by the fence
// is not one: it says this pod does not lead.

// refused records err as one of the pass's refusals and reports whether it
// is one; the first refusal is the one status shows.
func (s *scope) refused(err error) bool {
	if err == nil || isFenced(err) || !apply.Refused(err) {
		return false
	}
	if s.refusal == "" {
		s.refusal = apply.Refusal(err)
	}
	return true
}

// setRefusal reports the pass's refusal in Available=False, unless the
// control plane still serves (a refused change leaves the running objects as
// they were); computeStatus sets ValidConfiguration=False with it.
func (s *scope) setRefusal(set func(string, bool, string, string)) {
	if s.refusal == "" {
		return
	}
	if !meta.IsStatusConditionTrue(s.hcp.Status.Conditions, hyperv1.Available) {
		set(hyperv1.Available, false, hyperv1.RefusedByAPIServerReason, s.refusal)
	}
}

// reportRefusal logs at info level and records a Warning event when the
// pass's refusal is not the one reported last: once per change, not once
// per retry, even when a pass starts from a cached copy older than the last
// status write. Status that already shows it (a restarted process) is not
// reported again either.
func (r *Reconciler) reportRefusal(ctx context.Context, s *scope) {
	if s.refusal == "" || !r.refusals.report(s.refusal) {
		return
	}
	if before := meta.FindStatusCondition(s.original.Status.Conditions, hyperv1.ValidConfiguration); before != nil &&
		before.Status == metav1.ConditionFalse && before.Reason == hyperv1.RefusedByAPIServerReason && before.Message == s.refusal {
		return
	}
	ctrl.LoggerFrom(ctx).Info("The management cluster's API server refused an object of the control plane", "refusal", s.refusal)
	if r.Recorder != nil {
		r.Recorder.Eventf(s.hcp, nil, corev1.EventTypeWarning, hyperv1.RefusedByAPIServerReason, "Apply", "%s", s.refusal)
	}
}

const (
	minRefusalRetry = 2 * time.Second
	maxRefusalRetry = time.Minute
)

// refusalRetries spaces the passes while objects are refused: the next pass
// comes as long after this one as the refusal has lasted, at least
// minRefusalRetry and at most maxRefusalRetry (2s, 4s, 8s, ... 1m); a pass
// without a refusal starts it over. It also remembers the refusal last
// reported.
type refusalRetries struct {
	mu       sync.Mutex
	since    time.Time
	reported string
}

// report returns whether refusal differs from the one reported last, and
// remembers it.
func (b *refusalRetries) report(refusal string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	changed := b.reported != refusal
	b.reported = refusal
	return changed
}

// next returns the delay before the next pass of a pass with a refusal.
func (b *refusalRetries) next(now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.since.IsZero() {
		b.since = now
	}
	return min(max(now.Sub(b.since), minRefusalRetry), maxRefusalRetry)
}

// forget ends the refusal.
func (b *refusalRetries) forget() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.since, b.reported = time.Time{}, ""
}
