package hostedcluster

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// TestWaitBackoffCountsTime: the delay follows how long the wait has
// lasted, not how many passes ran (passes started by the operator's own
// status writes must not push the next retry away), and restarts after
// Forget.
func TestWaitBackoffCountsTime(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1_800_000_000, 0))
	b := &waitBackoff{clock: clk}
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "clusters", Name: "demo"}}
	for range 5 { // passes in a burst
		if d := b.When(req); d != minWaitRetry {
			t.Fatalf("a pass right after the wait began waits %s, want %s", d, minWaitRetry)
		}
	}
	for _, step := range []struct{ elapsed, want time.Duration }{
		{elapsed: 8 * time.Second, want: 8 * time.Second},
		{elapsed: 10 * time.Minute, want: maxWaitRetry},
	} {
		clk.SetTime(time.Unix(1_800_000_000, 0).Add(step.elapsed))
		if d := b.When(req); d != step.want {
			t.Errorf("after %s of waiting the next pass comes in %s, want %s", step.elapsed, d, step.want)
		}
	}
	b.Forget(req)
	if d := b.When(req); d != minWaitRetry {
		t.Errorf("after Forget the wait restarts at %s, want %s", d, minWaitRetry)
	}
}
