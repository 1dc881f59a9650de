package leaderelection

import (
	"context"
	"errors"
	"maps"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/hypershift-le/hypershift/support/config"
	"github.com/hypershift-le/hypershift/support/leasestate"
)

// timings are the defaults: LD 60s, RD 45s, RP 2s, RI 30s.
var timings = config.DefaultControlPlaneOperatorTimings

// candidate runs one elector on the fake API and the fake clock.
type candidate struct {
	e    *Elector
	last waitAt
	// stopping, when set, runs when the leader-only work is told to stop,
	// before it returns.
	stopping func()
	cancel   context.CancelFunc
	done     chan error
	waits    chan waitAt
	leadCtx  chan context.Context
}

type waitAt struct {
	d  time.Duration
	ok bool
}

func start(t *testing.T, api *fakeAPI, clk *clocktesting.FakeClock, id string, noRelease bool) *candidate {
	t.Helper()
	return startWith(t, api, clk, id, noRelease, nil, nil)
}

func startWith(t *testing.T, api *fakeAPI, clk *clocktesting.FakeClock, id string, noRelease bool, stopping func(), annotations map[string]string) *candidate {
	t.Helper()
	c := &candidate{done: make(chan error, 1), waits: make(chan waitAt, 1000), leadCtx: make(chan context.Context, 1), stopping: stopping}
	c.e = newElector(Config{Namespace: "ns", Name: "lease", Identity: id, Timings: timings, Clock: clk, NoRelease: noRelease, Annotations: annotations}, api)
	c.e.onWait = func(d time.Duration, ok bool) { c.waits <- waitAt{d, ok} }
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	go func() {
		c.done <- c.e.Run(ctx, func(ctx context.Context) error {
			c.leadCtx <- ctx
			<-ctx.Done()
			if c.stopping != nil {
				c.stopping()
			}
			return nil
		})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-c.done:
			if err != nil && !errors.Is(err, ErrLost) {
				t.Errorf("%s returned %v", id, err)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("%s did not stop", id)
		}
	})
	return c
}

// settle waits until the candidate blocks with nothing left to handle (no
// new wait for 100ms) and returns how long it will wait.
func (c *candidate) settle(t *testing.T) waitAt {
	t.Helper()
	for {
		select {
		case c.last = <-c.waits:
		case <-time.After(100 * time.Millisecond):
			return c.last
		}
	}
}

func (c *candidate) leading() bool { return c.e.Status().Leading }

func (c *candidate) awaitLead(t *testing.T) context.Context {
	t.Helper()
	select {
	case ctx := <-c.leadCtx:
		return ctx
	case <-time.After(5 * time.Second):
		t.Fatalf("%s did not start leading", c.e.Identity())
		return nil
	}
}

func (c *candidate) awaitExit(t *testing.T) error {
	t.Helper()
	select {
	case err := <-c.done:
		c.done <- err
		return err
	case <-time.After(5 * time.Second):
		t.Fatalf("%s did not return", c.e.Identity())
		return nil
	}
}

func heldBy(id string, renewed time.Time) func(*coordinationv1.Lease) {
	return func(l *coordinationv1.Lease) {
		l.Spec.HolderIdentity = ptr.To(id)
		l.Spec.LeaseDurationSeconds = ptr.To(int32(60))
		l.Spec.RenewTime = &metav1.MicroTime{Time: renewed}
	}
}

// leader starts candidate "a" on an empty API and waits until it leads
// and waits for its next renewal.
func leader(t *testing.T) (*fakeAPI, *clocktesting.FakeClock, *candidate, context.Context) {
	t.Helper()
	api, clk := newFakeAPI(), newClock()
	a := start(t, api, clk, "a", false)
	leadCtx := a.awaitLead(t)
	a.settle(t)
	return api, clk, a, leadCtx
}

func newClock() *clocktesting.FakeClock {
	return clocktesting.NewFakeClock(time.Unix(1_800_000_000, 0))
}

func TestAcquireWhenMissing(t *testing.T) {
	api, clk := newFakeAPI(), newClock()
	a := start(t, api, clk, "a", false)
	a.awaitLead(t)
	if w := a.settle(t); !w.ok || w.d != timings.Renew() {
		t.Fatalf("after acquiring it waits %v, want the renew interval %s", w, timings.Renew())
	}
	l := api.current()
	if leasestate.Holder(l) != "a" || *l.Spec.LeaseDurationSeconds != 60 || *l.Spec.LeaseTransitions != 0 {
		t.Fatalf("lease %+v", l.Spec)
	}
	if n := api.count("create"); n != 1 {
		t.Errorf("%d creates", n)
	}
	if n := api.count("get"); n != 0 {
		t.Errorf("%d gets, want 0: the list and watch tell it everything", n)
	}
}

// TestAnnotationsAreSetWhenTaken: a candidate's annotations are on the
// Lease it creates, and replace (only) their own keys when it takes the
// Lease over.
func TestAnnotationsAreSetWhenTaken(t *testing.T) {
	api, clk := newFakeAPI(), newClock()
	a := startWith(t, api, clk, "a", true, nil, map[string]string{"example.com/shards": "4"})
	a.awaitLead(t)
	if got := api.current().Annotations; !maps.Equal(got, map[string]string{"example.com/shards": "4"}) {
		t.Fatalf("annotations of the created Lease: %v", got)
	}
	a.cancel()
	if err := a.awaitExit(t); err != nil {
		t.Fatal(err)
	}
	api.write(func(l *coordinationv1.Lease) { l.Annotations["example.com/other"] = "kept" })
	b := startWith(t, api, clk, "b", false, nil, map[string]string{"example.com/shards": "2"})
	b.settle(t)
	clk.Step(timings.LeaseDuration)
	b.settle(t)
	clk.Step(timings.RetryPeriod)
	b.awaitLead(t)
	want := map[string]string{"example.com/shards": "2", "example.com/other": "kept"}
	if l := api.current(); leasestate.Holder(l) != "b" || !maps.Equal(l.Annotations, want) {
		t.Fatalf("after the takeover the Lease is held by %q with annotations %v, want b with %v", leasestate.Holder(l), l.Annotations, want)
	}
}

func TestRenewEveryRenewInterval(t *testing.T) {
	api, clk, a, _ := leader(t)
	clk.Step(timings.Renew() - time.Millisecond)
	a.settle(t)
	if n := api.count("update"); n != 0 {
		t.Fatalf("renewed %d times before the renew interval", n)
	}
	clk.Step(time.Millisecond)
	a.settle(t)
	if n := api.count("update"); n != 1 {
		t.Fatalf("%d renewals at the renew interval, want 1", n)
	}
	for range 4 {
		clk.Step(timings.Renew())
		a.settle(t)
	}
	// 5 renewals in 2.5 minutes: 2 writes a minute.
	if n := api.count("update"); n != 5 {
		t.Fatalf("%d renewals in 5 renew intervals", n)
	}
	if got := api.current().Spec.RenewTime.Time; !got.Equal(clk.Now()) {
		t.Errorf("renewTime %s, want %s", got, clk.Now())
	}
	if !a.leading() {
		t.Error("not leading after renewals")
	}
}

func TestFastRetryAfterAFailedRenewal(t *testing.T) {
	api, clk, a, _ := leader(t)
	api.setFail("update", apierrors.NewServiceUnavailable("etcd is slow"))
	clk.Step(timings.Renew())
	if w := a.settle(t); w.d != timings.RetryPeriod {
		t.Fatalf("after a failed renewal it waits %s, want the retry period %s", w.d, timings.RetryPeriod)
	}
	clk.Step(timings.RetryPeriod)
	a.settle(t)
	api.setFail("update", nil)
	clk.Step(timings.RetryPeriod)
	if w := a.settle(t); w.d != timings.Renew() {
		t.Fatalf("after the retry succeeded it waits %s, want the renew interval", w.d)
	}
	if n := api.count("update"); n != 3 {
		t.Fatalf("%d update attempts, want 3 (fail, fail, succeed)", n)
	}
	if !a.leading() {
		t.Fatal("it stopped leading although a retry succeeded before the deadline")
	}
}

func TestStepDownAtTheRenewDeadline(t *testing.T) {
	api, clk, a, leadCtx := leader(t)
	acquired := clk.Now()
	api.setFail("update", apierrors.NewServiceUnavailable("etcd is down"))
	for clk.Now().Sub(acquired) < timings.RenewDeadline-time.Millisecond {
		w := a.settle(t)
		if w.d <= 0 {
			t.Fatalf("it would act again at once at %s", clk.Now().Sub(acquired))
		}
		if clk.Now().Add(w.d).After(acquired.Add(timings.RenewDeadline)) {
			t.Fatalf("it would wait past its deadline: %s + %s", clk.Now().Sub(acquired), w.d)
		}
		clk.Step(w.d)
		if clk.Now().Sub(acquired) < timings.RenewDeadline && leadCtx.Err() != nil {
			t.Fatalf("it stopped leading at %s, before the deadline", clk.Now().Sub(acquired))
		}
	}
	a.settle(t)
	if leadCtx.Err() == nil || a.leading() {
		t.Fatalf("at the deadline the leader-only work still runs")
	}
	if got := clk.Now().Sub(acquired); got != timings.RenewDeadline {
		t.Fatalf("it stepped down %s after the last renewal, want exactly the renew deadline", got)
	}
	// 1 at the renew interval, then every retry period until 45s: 30, 32, ..., 44.
	if n := api.count("update"); n != 8 {
		t.Errorf("%d renewal attempts, want 8", n)
	}
	if leasestate.Holder(api.current()) != "a" {
		t.Error("a leader cut off must not release")
	}
	select {
	case err := <-a.done:
		t.Fatalf("a leader cut off by an API server that does not answer exited: %v", err)
	default:
	}
}

// TestCutOffLeaderLeadsAgain cuts a leader off past its renew deadline and
// then lets the API server answer: its compare-and-swap renewal succeeds
// (no one wrote the Lease meanwhile) and it leads again, in a new term,
// within a retry period; holder and transitions are unchanged.
func TestCutOffLeaderLeadsAgain(t *testing.T) {
	api, clk, a, first := leader(t)
	transitions := *api.current().Spec.LeaseTransitions
	api.setFail("update", apierrors.NewServiceUnavailable("etcd is down"))
	clk.Step(timings.RenewDeadline)
	a.settle(t)
	clk.Step(timings.RenewDeadline)
	a.settle(t)
	if first.Err() == nil || a.leading() {
		t.Fatal("the leader-only work runs past the renew deadline")
	}
	api.setFail("update", nil)
	clk.Step(timings.RetryPeriod)
	second := a.awaitLead(t)
	if second.Err() != nil || !a.leading() {
		t.Fatal("it did not lead again once its renewal succeeded")
	}
	if l := api.current(); leasestate.Holder(l) != "a" || *l.Spec.LeaseTransitions != transitions {
		t.Fatalf("holder %q transitions %d, want a and %d", leasestate.Holder(l), *l.Spec.LeaseTransitions, transitions)
	}
}

// TestCutOffLeaderFindsASuccessor lets another candidate take the Lease
// while the leader is cut off: its renewal conflicts, and it exits naming
// the new holder.
func TestCutOffLeaderFindsASuccessor(t *testing.T) {
	api, clk, a, _ := leader(t)
	api.setFail("update", apierrors.NewServiceUnavailable("etcd is down"))
	clk.Step(timings.RenewDeadline)
	a.settle(t)
	api.mute()
	api.setFail("update", nil)
	api.write(heldBy("b", clk.Now()))
	clk.Step(timings.RetryPeriod)
	err := a.awaitExit(t)
	if !errors.Is(err, ErrLost) || !containsAll(err.Error(), `held by "b"`) {
		t.Fatalf("got %v, want a loss naming b", err)
	}
}

// TestRefusedRenewalsEndTheProcess refuses the leader's renewals (an
// answer, not an outage): at the deadline it has lost, as before.
func TestRefusedRenewalsEndTheProcess(t *testing.T) {
	api, clk, a, _ := leader(t)
	api.setFail("update", apierrors.NewForbidden(leaseGR, "lease", errors.New("RBAC")))
	for range 20 {
		if w := a.settle(t); w.ok {
			clk.Step(max(w.d, time.Millisecond))
		}
		select {
		case err := <-a.done:
			a.done <- err
			if !errors.Is(err, ErrLost) {
				t.Fatalf("got %v, want a loss", err)
			}
			return
		default:
		}
	}
	t.Fatal("a leader whose renewals are refused did not exit")
}

func TestFollowerWatchesAndTakesOverAtExpiry(t *testing.T) {
	api, clk := newFakeAPI(), newClock()
	api.write(heldBy("other", clk.Now()))
	b := start(t, api, clk, "b", false)
	if w := b.settle(t); w.d != timings.LeaseDuration {
		t.Fatalf("the follower waits %s, want the lease duration", w.d)
	}
	// The holder renews: the follower's clock restarts from what it saw.
	clk.Step(50 * time.Second)
	api.write(heldBy("other", clk.Now()))
	if w := b.settle(t); w.d != timings.LeaseDuration {
		t.Fatalf("after a renewal it waits %s, want the full lease duration", w.d)
	}
	clk.Step(timings.LeaseDuration - time.Millisecond)
	b.settle(t)
	if b.leading() {
		t.Fatal("it took the Lease before it expired")
	}
	clk.Step(time.Millisecond)
	// It reads the expired Lease, and once more a retry period later.
	b.settle(t)
	if b.leading() {
		t.Fatal("it took the Lease on one read")
	}
	clk.Step(timings.RetryPeriod)
	b.awaitLead(t)
	l := api.current()
	if leasestate.Holder(l) != "b" || *l.Spec.LeaseTransitions != 1 || !l.Spec.AcquireTime.Time.Equal(clk.Now()) {
		t.Fatalf("lease after the takeover %+v", l.Spec)
	}
	if n := api.count("get"); n != 2 {
		t.Errorf("the follower read the Lease %d times, want 2: it watches, and reads twice before it takes an expired Lease", n)
	}
	if n := api.count("list"); n != 1 {
		t.Errorf("%d lists, want the 1 that starts the watch", n)
	}
}

func TestReleaseIsSeenAtOnce(t *testing.T) {
	api, clk, a, _ := leader(t)
	b := start(t, api, clk, "b", false)
	b.settle(t)
	a.cancel()
	if err := a.awaitExit(t); err != nil {
		t.Fatalf("a graceful stop returned %v", err)
	}
	b.awaitLead(t) // no clock step: the watch showed the release
	if n := api.count("get"); n != 1 {
		t.Errorf("%d gets, want the 1 of the release", n)
	}
}

func TestReleaseOrder(t *testing.T) {
	api, clk := newFakeAPI(), newClock()
	stopped := make(chan string, 1)
	a := startWith(t, api, clk, "a", false, func() {
		// The leader-only work is still stopping: the Lease must be held.
		time.Sleep(50 * time.Millisecond)
		stopped <- leasestate.Holder(api.current())
	}, nil)
	a.awaitLead(t)
	a.settle(t)
	a.cancel()
	if err := a.awaitExit(t); err != nil {
		t.Fatalf("a graceful stop returned %v", err)
	}
	if h := <-stopped; h != "a" {
		t.Fatalf("the Lease was held by %q while the leader-only work stopped, want still a", h)
	}
	if h := leasestate.Holder(api.current()); h != "" {
		t.Fatalf("after the stop the holder is %q, want released", h)
	}
}

func TestReleaseOnlyWhenStillHolder(t *testing.T) {
	api, clk, a, _ := leader(t)
	// Another candidate took the Lease, and a has not heard yet.
	api.mute()
	api.write(heldBy("c", clk.Now()))
	a.cancel()
	if err := a.awaitExit(t); !errors.Is(err, ErrLost) || !containsAll(err.Error(), `held by "c"`) {
		t.Fatalf("a stop that finds the Lease taken returned %v, want it lost to c", err)
	}
	if h := leasestate.Holder(api.current()); h != "c" {
		t.Fatalf("the late release clobbered the new holder: holder %q", h)
	}
	if n := api.count("update"); n != 0 {
		t.Fatalf("%d updates by a deposed leader", n)
	}
}

func TestDeposedLeaderLearnsThroughTheWatch(t *testing.T) {
	api, clk, a, leadCtx := leader(t)
	api.write(heldBy("intruder", clk.Now()))
	err := a.awaitExit(t)
	if !errors.Is(err, ErrLost) || leadCtx.Err() == nil {
		t.Fatalf("err %v, leader work %v", err, leadCtx.Err())
	}
	if !containsAll(err.Error(), "leader election lost", "intruder") {
		t.Errorf("the error does not say who holds it: %v", err)
	}
}

func TestDeletedLeaseEndsLeading(t *testing.T) {
	api, _, a, _ := leader(t)
	api.delete()
	if err := a.awaitExit(t); !errors.Is(err, ErrLost) {
		t.Fatalf("err %v", err)
	}
}

func TestConflictingCandidatesOneWins(t *testing.T) {
	api, clk := newFakeAPI(), newClock()
	api.write(func(l *coordinationv1.Lease) { l.Spec.HolderIdentity = ptr.To("") })
	// Both try and fail, so that both retry from the same version.
	api.setFail("update", apierrors.NewServiceUnavailable("busy"))
	b := start(t, api, clk, "b", false)
	c := start(t, api, clk, "c", false)
	b.settle(t)
	c.settle(t)
	api.setFail("update", nil)
	clk.Step(timings.RetryPeriod)
	b.settle(t)
	c.settle(t)
	if b.leading() == c.leading() {
		t.Fatalf("b leads %v, c leads %v: want exactly one", b.leading(), c.leading())
	}
	if n := api.count("update"); n != 4 {
		t.Errorf("%d updates, want 4 (2 refused, then one wins and one conflicts)", n)
	}
	if n := api.count("get"); n != 1 {
		t.Errorf("%d gets, want 1 (the loser reads after its conflict)", n)
	}
}

func TestRenewalConflictWithItselfIsAdopted(t *testing.T) {
	api, clk, a, _ := leader(t)
	// Someone changes the Lease but not its holder (a label, say), and a
	// misses the event: its renewal conflicts, it reads, and keeps leading.
	api.mute()
	api.write(func(l *coordinationv1.Lease) { l.Labels = map[string]string{"x": "y"} })
	clk.Step(timings.Renew())
	a.settle(t)
	clk.Step(timings.RetryPeriod)
	a.settle(t)
	if !a.leading() || leasestate.Holder(api.current()) != "a" || api.current().Labels["x"] != "y" {
		t.Fatalf("leading %v, lease %+v", a.leading(), api.current())
	}
	if n := api.count("get"); n != 1 {
		t.Errorf("%d gets, want the 1 after the conflict", n)
	}
}

// TestCutOffLeaderRenewsOnItsLandedRenewalAtOnce: after an outage the API
// server receives a renewal the cut-off leader had given up on; the
// leader's next renewal conflicts with it, and it renews on top of it at
// once, leading again without waiting another retry period.
func TestCutOffLeaderRenewsOnItsLandedRenewalAtOnce(t *testing.T) {
	api, clk, a, _ := leader(t)
	api.setFail("update", apierrors.NewServiceUnavailable("etcd is down"))
	clk.Step(timings.RenewDeadline)
	a.settle(t)
	clk.Step(timings.RenewDeadline)
	a.settle(t)
	if a.leading() {
		t.Fatal("the leader-only work runs past the renew deadline")
	}
	api.mute()
	api.setFail("update", nil)
	api.write(heldBy("a", clk.Now())) // the renewal it gave up on lands
	clk.Step(timings.RetryPeriod)
	a.awaitLead(t) // no further step of the clock
	if n := api.count("get"); n != 1 {
		t.Errorf("%d gets, want the 1 after the conflict", n)
	}
}

func TestStaleEventsAreIgnored(t *testing.T) {
	clk := newClock()
	c := &campaign{e: newElector(Config{Namespace: "ns", Name: "lease", Identity: "a", Timings: timings, Clock: clk}, newFakeAPI())}
	newer := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "12"}, Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("a")}}
	older := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "9"}, Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("")}}
	c.apply(observation{lease: newer, rv: "12"})
	seen := c.knownAt
	clk.Step(time.Second)
	c.apply(observation{lease: older, rv: "9"})
	c.apply(observation{lease: newer, rv: "12"})
	if c.knownRV != "12" || leasestate.Holder(c.known) != "a" || !c.knownAt.Equal(seen) {
		t.Fatalf("known %s held by %q seen at %s", c.knownRV, leasestate.Holder(c.known), c.knownAt)
	}
}

func TestRestartedHolderTakesItsLeaseBack(t *testing.T) {
	api, clk := newFakeAPI(), newClock()
	api.write(heldBy("a", clk.Now()))
	a := start(t, api, clk, "a", false)
	a.awaitLead(t)
	if l := api.current(); ptr.Deref(l.Spec.LeaseTransitions, 0) != 0 {
		t.Errorf("transitions %d: the same holder is no transition", *l.Spec.LeaseTransitions)
	}
}

func TestNoReleaseLeavesTheLeaseHeld(t *testing.T) {
	api, clk := newFakeAPI(), newClock()
	a := start(t, api, clk, "a", true)
	a.awaitLead(t)
	a.settle(t)
	a.cancel()
	if err := a.awaitExit(t); err != nil {
		t.Fatalf("a graceful stop returned %v", err)
	}
	if leasestate.Holder(api.current()) != "a" {
		t.Fatal("the Lease was released")
	}
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !errorsContains(s, p) {
			return false
		}
	}
	return true
}

func errorsContains(s, p string) bool {
	for i := 0; i+len(p) <= len(s); i++ {
		if s[i:i+len(p)] == p {
			return true
		}
	}
	return false
}

func TestExpiredWatchIsListedAgain(t *testing.T) {
	api, clk := newFakeAPI(), newClock()
	api.write(heldBy("other", clk.Now()))
	b := start(t, api, clk, "b", false)
	b.settle(t)
	api.expire()
	// A watch that ended at once is restarted after a retry period.
	for i := 0; i < 5 && api.count("list") < 2; i++ {
		time.Sleep(50 * time.Millisecond)
		clk.Step(timings.RetryPeriod)
		b.settle(t)
	}
	if n := api.count("list"); n != 2 {
		t.Fatalf("%d lists, want 2: a watch that expired is resumed from a new list", n)
	}
	// The renewal is seen through the new watch: the follower waits again.
	clk.Step(30 * time.Second)
	api.write(heldBy("other", clk.Now()))
	if w := b.settle(t); w.d != timings.LeaseDuration {
		t.Fatalf("after a renewal on the new watch it waits %s, want the lease duration", w.d)
	}
}

// TestStopAfterTheDeadlineIsALoss stops a leader that has not renewed for
// longer than its renew deadline (a frozen process, stopped when it
// resumes) while another candidate took the Lease: it must not report a
// clean stop, and its compare-and-swap renewal cannot touch the new
// holder's Lease.
func TestStopAfterTheDeadlineIsALoss(t *testing.T) {
	api, clk, a, _ := leader(t)
	api.mute()
	api.write(heldBy("b", clk.Now()))
	clk.Step(46 * time.Second) // past the 45s renew deadline, in one step
	a.cancel()
	err := a.awaitExit(t)
	if !errors.Is(err, ErrLost) || !containsAll(err.Error(), `held by "b"`) {
		t.Fatalf("got %v, want a loss naming the holder b", err)
	}
	if h := leasestate.Holder(api.current()); h != "b" {
		t.Fatalf("holder %q, want b untouched", h)
	}
}

// outage makes every request fail with no answer and drops the watch, for
// d on the fake clock, then lets requests through again.
func outage(t *testing.T, api *fakeAPI, clk *clocktesting.FakeClock, c *candidate, d time.Duration) {
	t.Helper()
	unreachable := errors.New("dial tcp 10.0.0.1:6443: connect: connection refused")
	for _, verb := range []string{"get", "list", "watch", "update", "create"} {
		api.setFail(verb, unreachable)
	}
	api.breakWatches()
	for end := clk.Now().Add(d); clk.Now().Before(end); {
		w := c.settle(t)
		step := timings.RetryPeriod
		if w.ok && w.d > 0 && w.d < step {
			step = w.d
		}
		clk.Step(step)
	}
	for _, verb := range []string{"get", "list", "watch", "update", "create"} {
		api.setFail(verb, nil)
	}
}

// TestFollowerPrefersTheIncumbentAfterAnOutage cuts a follower off from
// the API server for longer than the lease duration: once it sees the
// Lease again it counts the lease duration from then, so the incumbent,
// cut off by the same outage, renews first. The negative control, with the
// rule off, takes over at once.
func TestFollowerPrefersTheIncumbentAfterAnOutage(t *testing.T) {
	for _, tt := range []struct {
		name       string
		ignoreGaps bool
	}{
		{name: "when the follower saw nothing for a while, it waits the lease duration again"},
		{name: "when the rule is off (negative control), it takes over at once", ignoreGaps: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			api, clk := newFakeAPI(), newClock()
			api.write(heldBy("incumbent", clk.Now()))
			b := startWith(t, api, clk, "b", false, nil, nil)
			b.e.ignoreGaps = tt.ignoreGaps
			b.settle(t)
			outage(t, api, clk, b, 2*timings.LeaseDuration)
			// The follower sees the API server again: one retry period at most.
			clk.Step(timings.RetryPeriod)
			b.settle(t)
			clk.Step(timings.RetryPeriod)
			b.settle(t)
			if tt.ignoreGaps {
				if h := leasestate.Holder(api.current()); h != "b" {
					t.Fatalf("without the rule the follower did not take over (holder %q): the control proves nothing", h)
				}
				return
			}
			if h := leasestate.Holder(api.current()); h != "incumbent" {
				t.Fatalf("the follower took the Lease right after the outage (holder %q)", h)
			}
			// The incumbent renews within its retry period; the follower
			// sees it and waits again.
			api.write(heldBy("incumbent", clk.Now()))
			if w := b.settle(t); w.d != timings.LeaseDuration {
				t.Fatalf("after the incumbent's renewal the follower waits %s, want the lease duration", w.d)
			}
		})
	}
}

// TestContendGatesTheTakeover: a candidate whose Contend says no takes
// nothing, not even a Lease nobody holds, and asks again every retry
// period; once it says yes, the candidate takes the Lease.
func TestContendGatesTheTakeover(t *testing.T) {
	api, clk := newFakeAPI(), newClock()
	var contend atomic.Bool
	c := &candidate{done: make(chan error, 1), waits: make(chan waitAt, 1000), leadCtx: make(chan context.Context, 1)}
	c.e = newElector(Config{Namespace: "ns", Name: "lease", Identity: "a", Timings: timings, Clock: clk, Contend: contend.Load}, api)
	c.e.onWait = func(d time.Duration, ok bool) { c.waits <- waitAt{d, ok} }
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		c.done <- c.e.Run(ctx, func(ctx context.Context) error { c.leadCtx <- ctx; <-ctx.Done(); return nil })
	}()
	defer func() {
		cancel()
		if err := c.awaitExit(t); err != nil {
			t.Errorf("the candidate returned %v", err)
		}
	}()

	for range 3 {
		if w := c.settle(t); !w.ok || w.d != timings.RetryPeriod {
			t.Fatalf("while it may not contend it waits %v, want the retry period %s", w, timings.RetryPeriod)
		}
		clk.Step(timings.RetryPeriod)
	}
	c.settle(t)
	if n := api.count("create") + api.count("update"); n != 0 || c.leading() {
		t.Fatalf("it wrote the Lease %d times while it might not contend (leading %t)", n, c.leading())
	}
	contend.Store(true)
	clk.Step(timings.RetryPeriod)
	c.awaitLead(t)
	if l := api.current(); leasestate.Holder(l) != "a" {
		t.Fatalf("the Lease is held by %q", leasestate.Holder(l))
	}
}
