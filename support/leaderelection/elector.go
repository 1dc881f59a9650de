package leaderelection

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/hypershift-le/hypershift/support/config"
	"github.com/hypershift-le/hypershift/support/leasestate"
)

// ErrLost is wrapped by Run's error when this candidate stopped leading
// without being asked to: its process must end.
var ErrLost = errors.New("leader election lost")

// Config configures an Elector.
type Config struct {
	// Client reaches the API server. Give the elector a client of its own,
	// so that the controllers' client-side rate limit never delays a renewal.
	Client coordinationv1client.LeasesGetter
	// Namespace and Name name the Lease.
	Namespace, Name string
	// Identity is this candidate's spec.holderIdentity: unique per process
	// that may run at the same time (the pod's name).
	Identity string
	// Timings must pass Validate.
	Timings config.Timings
	// Clock is the real clock when nil.
	Clock clock.WithTicker
	// Log receives the elector's decisions.
	Log logr.Logger
	// NoRelease leaves the Lease held when Run's context ends, as a crashed
	// process would. For tests and benchmarks.
	NoRelease bool
}

// Elector campaigns for one Lease; see the package documentation.
type Elector struct {
	api       leaseAPI
	namespace string
	name      string
	lease     string
	identity  string
	timings   config.Timings
	clock     clock.WithTicker
	log       logr.Logger
	release   bool

	mu     sync.Mutex
	status Status

	contact contact

	// onWait, in tests, learns each wait before the loop blocks: how long
	// until it acts, or false for "until an observation".
	onWait func(time.Duration, bool)
	// ignoreGaps, in tests, turns the incumbent's preference off: a
	// follower counts the lease duration from the last change it saw, even
	// across a time it could not observe the Lease (the negative control).
	ignoreGaps bool
}

// Status is what an elector knows, for metrics and logs.
type Status struct {
	// Leading is true while this candidate runs its leader-only work.
	Leading bool
	// Holder is the holder this candidate last saw ("" for none).
	Holder string
	// LastRenew is when the last successful acquisition or renewal by this
	// candidate started; zero before the first.
	LastRenew time.Time
	// Transitions counts the changes of the holder from one candidate to
	// another this candidate witnessed: not its first sighting, not a
	// release (a holder of ""), not the first holder of a Lease nobody held.
	Transitions int
}

// New returns an elector for cfg.
func New(cfg Config) (*Elector, error) {
	if err := cfg.Timings.Validate(); err != nil {
		return nil, err
	}
	if cfg.Client == nil || cfg.Namespace == "" || cfg.Name == "" || cfg.Identity == "" {
		return nil, errors.New("leader election needs a client, the Lease's namespace and name, and an identity")
	}
	return newElector(cfg, clientAPI{leases: cfg.Client.Leases(cfg.Namespace), name: cfg.Name}), nil
}

func newElector(cfg Config, api leaseAPI) *Elector {
	c := cfg.Clock
	if c == nil {
		c = clock.RealClock{}
	}
	e := &Elector{
		namespace: cfg.Namespace,
		name:      cfg.Name,
		lease:     cfg.Namespace + "/" + cfg.Name,
		identity:  cfg.Identity,
		timings:   cfg.Timings,
		clock:     c,
		log:       cfg.Log.WithValues("lease", cfg.Namespace+"/"+cfg.Name, "identity", cfg.Identity),
		release:   !cfg.NoRelease,
	}
	e.api = trackedAPI{api: api, e: e}
	return e
}

// Identity is the candidate's holder identity; "" for a nil elector
// (election off).
func (e *Elector) Identity() string {
	if e == nil {
		return ""
	}
	return e.identity
}

// Status returns what the elector knows now.
func (e *Elector) Status() Status {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.status
}

// Run campaigns until ctx ends. While it leads, it runs lead with a context
// that ends when leadership does; lead runs once per term. When ctx ends, it
// waits for lead to return and releases the Lease, then returns nil; if it
// finds then that it had already lost the Lease, it returns an error
// wrapping ErrLost. When it stops leading because another candidate holds
// the Lease, or it was deleted, or the API server refused its renewals, it
// returns an error wrapping ErrLost at once. When it stops leading because
// no renewal succeeded by the renew deadline, the API server not answering
// (or the process frozen), it keeps running cut off (see the package
// documentation) and leads again, in a new term, once a compare-and-swap
// renewal succeeds. When lead returns on its own, it releases
// and returns lead's error.
func (e *Elector) Run(ctx context.Context, lead func(context.Context) error) error {
	obsCtx, stopObserving := context.WithCancel(ctx)
	defer stopObserving()
	observations := make(chan observation)
	go e.observe(obsCtx, observations)

	c := &campaign{e: e, observations: observations, timer: e.clock.NewTimer(time.Hour)}
	defer c.timer.Stop()
	next := c.follow
	for {
		state, err := next(ctx, lead)
		switch state {
		case following:
			next = c.follow
		case holding:
			next = c.hold
		case cutOff:
			next = c.reconnect
		default:
			return err
		}
	}
}

// state is where a campaign goes next.
type state int

const (
	// done ends Run.
	done state = iota
	// following waits for the Lease to be free and takes it.
	following
	// holding runs a term of leader-only work and renews the Lease.
	holding
	// cutOff holds no term: the API server stopped answering before the
	// renew deadline, and the Lease may still name this candidate.
	cutOff
)

// follow waits, as a follower, until the Lease may be taken, and takes it.
func (c *campaign) follow(ctx context.Context, _ func(context.Context) error) (state, error) {
	for {
		wait, ok := c.followerWait()
		switch wake, o := c.wait(ctx, wait, ok, nil); wake {
		case wokeByStop:
			return done, nil
		case wokeByObservation:
			c.apply(o)
		case wokeToAct:
			if c.tryAcquire(ctx) {
				return holding, nil
			}
		}
	}
}

// hold runs one term of leader-only work and renews the Lease until the
// term ends: the Lease is lost (done, with ErrLost), the API server is cut
// off at the renew deadline (cutOff), ctx ends (done, after the release),
// or the work ends on its own (done, with its error).
func (c *campaign) hold(ctx context.Context, lead func(context.Context) error) (state, error) {
	work := c.startTerm(ctx, lead)
	lost := func(why string) (state, error) {
		c.e.log.Info("Stopped leading: "+why, "holder", leasestate.Holder(c.known))
		work.stop(c.e.timings.SkewMargin())
		return done, fmt.Errorf("%w: %s", ErrLost, why)
	}
	for {
		switch wake, o := c.wait(ctx, c.leaderWait(), true, work.done); wake {
		case wokeByStop:
			// The work may take until the renew deadline; the Lease is
			// released only once it stopped, and only before the deadline.
			work.stop(c.renewedAt.Add(c.e.timings.RenewDeadline).Sub(c.e.clock.Now()))
			if !c.e.release {
				return done, nil
			}
			return done, c.releaseLease(ctx)

		case wokeByObservation:
			c.apply(o)
			if why := c.notOurs(); why != "" {
				return lost(why)
			}

		case wokeToAct:
			if c.e.clock.Now().Sub(c.renewedAt) >= c.e.timings.RenewDeadline {
				if c.refused {
					return lost(fmt.Sprintf("the API server refused the renewals until the renew deadline (%s); the Lease is held by %q", c.e.timings.RenewDeadline, c.currentHolder(ctx)))
				}
				c.e.log.Info("Stopped leading: no renewal succeeded within the renew deadline; renewing again until one does",
					"deadline", c.e.timings.RenewDeadline)
				work.stop(c.e.timings.SkewMargin())
				return cutOff, nil
			}
			if why := c.renew(ctx); why != "" {
				return lost(why)
			}

		case wokeByWorkEnd:
			err := work.result
			c.e.log.Info("Leader-only work ended; releasing the Lease", "err", err)
			work.cancel()
			c.e.setLeading(false, time.Time{})
			if c.e.release {
				if lostErr := c.releaseLease(ctx); lostErr != nil {
					return done, errors.Join(err, lostErr)
				}
			}
			return done, err
		}
	}
}

// reconnect renews, every retry period, the Lease this candidate held when
// the API server stopped answering: a compare-and-swap on its own last
// write, which succeeds only if no one wrote the Lease since. It leads again
// (holding) when one succeeds; it has lost when another holder, a deleted
// Lease or a refusal shows.
func (c *campaign) reconnect(ctx context.Context, _ func(context.Context) error) (state, error) {
	lost := func(why string) (state, error) {
		c.e.log.Info("Stopped: "+why, "holder", leasestate.Holder(c.known))
		return done, fmt.Errorf("%w: %s", ErrLost, why)
	}
	for {
		switch wake, o := c.wait(ctx, c.retryWait(), true, nil); wake {
		case wokeByStop:
			if !c.e.release {
				return done, nil
			}
			return done, c.releaseLease(ctx)
		case wokeByObservation:
			c.apply(o)
			if why := c.notOurs(); why != "" {
				return lost(why)
			}
			// The API server answers again: renew now.
			c.retryAt = c.e.clock.Now()
		case wokeToAct:
			if why := c.renew(ctx); why != "" {
				return lost(why)
			}
			if c.retryAt.IsZero() {
				c.e.log.Info("Renewed the Lease after the API server answered again; leading again")
				return holding, nil
			}
			if c.refused {
				return lost("the API server refused the renewal")
			}
		}
	}
}

// notOurs says why the Lease last observed is no longer this candidate's:
// deleted or held by another; "" while it is ours.
func (c *campaign) notOurs() string {
	if c.known == nil {
		return "the Lease was deleted"
	}
	if h := leasestate.Holder(c.known); h != c.e.identity {
		return fmt.Sprintf("the Lease is now held by %q", h)
	}
	return ""
}

// wakeup is what ended a wait.
type wakeup int

const (
	wokeByStop wakeup = iota
	wokeByObservation
	wokeToAct
	wokeByWorkEnd
)

// wait blocks until ctx ends, an observation arrives, the work ends, or it
// is time to act: after d, at once when d <= 0, never when !ok.
func (c *campaign) wait(ctx context.Context, d time.Duration, ok bool, workDone <-chan struct{}) (wakeup, observation) {
	var act <-chan time.Time
	switch {
	case ok && d <= 0:
		now := make(chan time.Time, 1)
		now <- c.e.clock.Now()
		act = now
	case ok:
		c.timer.Reset(d)
		act = c.timer.C()
	}
	if c.e.onWait != nil {
		c.e.onWait(d, ok)
	}
	select {
	case <-ctx.Done():
		return wokeByStop, observation{}
	case o := <-c.observations:
		return wokeByObservation, o
	case <-act:
		return wokeToAct, observation{}
	case <-workDone:
		return wokeByWorkEnd, observation{}
	}
}

// campaign is the state of one Run, owned by its goroutine; e is the
// elector it campaigns for, whose status is shared under e.mu.
type campaign struct {
	e            *Elector
	observations <-chan observation
	timer        clock.Timer
	// known is the newest Lease seen (nil: missing), at resourceVersion
	// knownRV, first seen at knownAt on the local clock.
	known   *coordinationv1.Lease
	knownRV string
	knownAt time.Time
	seen    bool
	// renewedAt is the start of the last successful acquisition or
	// renewal.
	renewedAt time.Time
	// retryAt, when set, is when to try again after a failed request.
	retryAt time.Time
	// blind is set while the observer cannot list or watch the Lease: a
	// follower then takes nothing over.
	blind bool
	// confirmedRV is the expired Lease's resourceVersion a follower read
	// at confirmedAt, before a takeover (see confirmExpiry).
	confirmedRV string
	confirmedAt time.Time
	// lastHolder is the last non-empty holder seen, for Transitions.
	lastHolder string
	// refused is true when the last failed renewal was refused by the API
	// server (a 403, say), not left unanswered (a transport error, a
	// timeout, a 5xx): only a refusal ends a holding at the renew deadline;
	// otherwise the candidate is cut off and tries again.
	refused bool
}

// followerWait is how long a follower waits before trying to take the
// Lease; false means until an observation.
func (c *campaign) followerWait() (time.Duration, bool) {
	if !c.seen || (c.blind && !c.e.ignoreGaps) {
		return 0, false
	}
	now := c.e.clock.Now()
	next := now
	if h := leasestate.Holder(c.known); c.known != nil && h != "" && h != c.e.identity {
		next = c.sighting(c.known).Expiry()
	}
	if c.retryAt.After(next) {
		next = c.retryAt
	}
	return next.Sub(now), true
}

// sighting is the known Lease version as this follower saw it (lease being
// that version): since knownAt, which a gap in observing moves to its end.
func (c *campaign) sighting(lease *coordinationv1.Lease) leasestate.Sighting {
	return leasestate.Sighting{ResourceVersion: c.knownRV, At: c.knownAt, Duration: leasestate.Duration(lease, c.e.timings.LeaseDuration)}
}

// leaderWait is how long the leader waits before renewing: the renew
// interval, the retry period after a failure, never past the deadline.
func (c *campaign) leaderWait() time.Duration {
	next := c.renewedAt.Add(c.e.timings.Renew())
	if !c.retryAt.IsZero() {
		next = c.retryAt
	}
	if deadline := c.renewedAt.Add(c.e.timings.RenewDeadline); deadline.Before(next) {
		next = deadline
	}
	return next.Sub(c.e.clock.Now())
}

// retryWait is how long a cut-off candidate waits before renewing again.
func (c *campaign) retryWait() time.Duration {
	return c.retryAt.Sub(c.e.clock.Now())
}

// apply records o unless it is not newer than what is known: watch events
// can arrive after the response to a newer write. Versions that do not
// compare are taken as newer.
func (c *campaign) apply(o observation) {
	if o.blind {
		c.blind = true
		return
	}
	if o.resumed && !c.e.ignoreGaps {
		// It could not observe the Lease for a while: count the lease
		// duration again from now, so that an incumbent cut off by the same
		// outage renews first (see the package documentation).
		c.knownAt, c.blind = c.e.clock.Now(), false
	}
	if o.resumed && o.lease == nil && o.rv == "" {
		return
	}
	if c.seen && c.knownRV != "" && o.rv != "" {
		if cmp, err := resourceversion.CompareResourceVersion(o.rv, c.knownRV); err == nil && cmp <= 0 {
			return
		}
	}
	previous := leasestate.Holder(c.known)
	c.known, c.knownRV, c.knownAt, c.seen = o.lease, o.rv, c.e.clock.Now(), true
	c.retryAt = time.Time{}
	holder := leasestate.Holder(c.known)
	c.e.mu.Lock()
	if holder != "" && c.lastHolder != "" && holder != c.lastHolder {
		c.e.status.Transitions++
	}
	c.e.status.Holder = holder
	c.e.mu.Unlock()
	if holder != "" {
		c.lastHolder = holder
	}
	if holder != previous {
		c.e.log.Info("The Lease's holder changed", "from", previous, "to", holder)
	}
}

// tryAcquire takes the Lease with a create or a compare-and-swap update.
// A Lease another candidate held until it expired is read first, twice a
// retry period apart: when the API server does not answer a read, its
// holder may have been cut off by the same outage, so the lease duration is
// counted again from when it answers. A read that lands late harms no one;
// a takeover write could.
func (c *campaign) tryAcquire(ctx context.Context) bool {
	if h := leasestate.Holder(c.known); c.known != nil && h != "" && h != c.e.identity && !c.e.ignoreGaps {
		if !c.confirmExpiry(ctx) {
			return false
		}
	}
	start := c.e.clock.Now()
	rctx, cancel := context.WithTimeout(ctx, c.e.timings.RequestTimeout())
	defer cancel()
	now := metav1.NewMicroTime(start)
	var result *coordinationv1.Lease
	var err error
	if c.known == nil {
		result, err = c.e.api.Create(rctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: c.e.name, Namespace: c.e.namespace},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       ptr.To(c.e.identity),
				LeaseDurationSeconds: ptr.To(int32(c.e.timings.LeaseDuration / time.Second)),
				AcquireTime:          &now,
				RenewTime:            &now,
				LeaseTransitions:     ptr.To(int32(0)),
			},
		})
	} else {
		lease := c.known.DeepCopy()
		if leasestate.Holder(lease) != c.e.identity {
			// A Lease created empty (the hypershift-operator creates the
			// CPO's) and never held has no acquireTime: taking it is the
			// first holding, not a transition.
			if leasestate.Holder(lease) != "" || lease.Spec.AcquireTime != nil {
				lease.Spec.LeaseTransitions = ptr.To(ptr.Deref(lease.Spec.LeaseTransitions, 0) + 1)
			}
			lease.Spec.AcquireTime = &now
		}
		lease.Spec.HolderIdentity = ptr.To(c.e.identity)
		lease.Spec.LeaseDurationSeconds = ptr.To(int32(c.e.timings.LeaseDuration / time.Second))
		lease.Spec.RenewTime = &now
		result, err = c.e.api.Update(rctx, lease)
	}
	switch {
	case err == nil:
		c.apply(observation{lease: result, rv: result.ResourceVersion})
		c.renewedAt, c.retryAt, c.refused = start, time.Time{}, false
		c.e.log.Info("Acquired the Lease", "transitions", ptr.Deref(result.Spec.LeaseTransitions, 0))
		return true
	case apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err):
		c.e.log.V(1).Info("Another candidate wrote the Lease first; reading it")
		c.refresh(ctx)
	case apierrors.IsNotFound(err):
		c.known = nil
	default:
		c.e.log.Info("Failed to acquire the Lease; retrying", "err", err.Error(), "retryIn", c.e.timings.RetryPeriod)
	}
	c.retryAt = c.e.clock.Now().Add(c.e.timings.RetryPeriod)
	return false
}

// confirmExpiry reads the Lease before a takeover and reports whether it is
// still the expired one: unchanged, read without a gap.
func (c *campaign) confirmExpiry(ctx context.Context) bool {
	rctx, cancel := context.WithTimeout(ctx, c.e.timings.RequestTimeout())
	defer cancel()
	lease, err := c.e.api.Get(rctx)
	switch {
	case err == nil:
		rv := c.knownRV
		c.apply(observation{lease: lease, rv: lease.ResourceVersion})
		// Unchanged, and expired by the clock that counts from the last
		// change seen or from the end of a gap.
		if lease.ResourceVersion != rv || !c.sighting(lease).Expired(c.e.clock.Now()) {
			c.confirmedRV = ""
			return false
		}
		// Twice, a retry period apart: a read that was held up by an
		// outage and answered as it ended proves nothing about the
		// incumbent, whose renewal was held up too; within a retry period
		// of the API server answering, it has renewed.
		if c.confirmedRV == rv && c.e.clock.Since(c.confirmedAt) >= c.e.timings.RetryPeriod {
			return true
		}
		if c.confirmedRV != rv {
			c.confirmedRV, c.confirmedAt = rv, c.e.clock.Now()
		}
	case apierrors.IsNotFound(err):
		c.known = nil
		return true
	case unanswered(err):
		c.e.log.Info("The API server did not answer before a takeover; counting the lease duration again once it does", "err", err.Error())
		c.apply(observation{resumed: true})
		c.confirmedRV = ""
	default:
		c.e.log.Info("Failed to read the Lease before a takeover", "err", err.Error())
	}
	c.retryAt = c.e.clock.Now().Add(c.e.timings.RetryPeriod)
	return false
}

// renew renews the held Lease with a compare-and-swap on its last write.
// It returns why leadership is lost, or "". A failure the API server
// answered with a refusal sets refused.
func (c *campaign) renew(ctx context.Context) string {
	start := c.e.clock.Now()
	timeout := c.e.timings.RequestTimeout()
	if left := c.renewedAt.Add(c.e.timings.RenewDeadline).Sub(start); left > 0 {
		timeout = min(timeout, left)
	} else {
		// Cut off: try often, so that the first renewal after the API
		// server answers again comes within a retry period or so.
		timeout = min(timeout, c.e.timings.RetryPeriod)
	}
	deadline := c.renewedAt.Add(c.e.timings.RenewDeadline)
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	lease := c.known.DeepCopy()
	now := metav1.NewMicroTime(start)
	lease.Spec.RenewTime = &now
	lease.Spec.LeaseDurationSeconds = ptr.To(int32(c.e.timings.LeaseDuration / time.Second))
	result, err := c.e.api.Update(rctx, lease)
	switch {
	case err == nil:
		c.apply(observation{lease: result, rv: result.ResourceVersion})
		c.renewedAt, c.retryAt, c.refused = start, time.Time{}, false
		c.e.setRenewed(start)
		return ""
	case apierrors.IsNotFound(err):
		return "the Lease was deleted"
	case apierrors.IsConflict(err):
		// Another write: ours that timed out but landed, or a new holder.
		tried := c.knownRV
		c.refresh(rctx)
		if c.known == nil {
			return "the Lease was deleted"
		}
		if h := leasestate.Holder(c.known); h != c.e.identity {
			return fmt.Sprintf("the Lease is now held by %q", h)
		}
		// Its own earlier renewal landed after all (after an outage, the
		// API server receives requests the candidate gave up on), or a
		// change that kept the holder: renew on top of it at once, not a
		// retry period later.
		c.refused = false
		if c.knownRV != tried {
			c.retryAt = c.e.clock.Now()
			return ""
		}
	default:
		c.refused = !unanswered(err)
		c.e.log.Info("Failed to renew the Lease; retrying", "err", err.Error(), "refused", c.refused,
			"retryIn", c.e.timings.RetryPeriod, "deadline", deadline.Sub(c.e.clock.Now()).Round(time.Millisecond))
	}
	c.retryAt = c.e.clock.Now().Add(c.e.timings.RetryPeriod)
	return ""
}

// currentHolder reads the Lease's holder, for the account of a loss:
// "unknown" when the API server does not answer within a request timeout.
func (c *campaign) currentHolder(ctx context.Context) string {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.e.timings.RequestTimeout())
	defer cancel()
	lease, err := c.e.api.Get(rctx)
	if err != nil {
		return "unknown"
	}
	return leasestate.Holder(lease)
}

// refresh reads the Lease after a conflict.
func (c *campaign) refresh(ctx context.Context) {
	rctx, cancel := context.WithTimeout(ctx, c.e.timings.RequestTimeout())
	defer cancel()
	lease, err := c.e.api.Get(rctx)
	switch {
	case err == nil:
		c.apply(observation{lease: lease, rv: lease.ResourceVersion})
	case apierrors.IsNotFound(err):
		c.known = nil
	default:
		c.e.log.Info("Failed to read the Lease", "err", err.Error())
	}
}

// releaseLease clears the holder if this candidate still holds the Lease
// and its holding has not passed the renew deadline: it reads the Lease
// and updates it preconditioned on that read's resourceVersion. It returns
// an error wrapping ErrLost, naming the holder, when the candidate turns out
// to have lost the Lease before it stopped: another pod holds it, or the
// renew deadline passed (a process frozen, then stopped); its process must
// not end as if it had handed over.
func (c *campaign) releaseLease(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.e.timings.RequestTimeout())
	defer cancel()
	if left := c.renewedAt.Add(c.e.timings.RenewDeadline).Sub(c.e.clock.Now()); left <= 0 {
		holder := c.currentHolder(rctx)
		c.e.log.Info("Not releasing the Lease: the renew deadline passed", "holder", holder)
		return fmt.Errorf("%w: no renewal succeeded within the renew deadline (%s) before the stop; the Lease is held by %q", ErrLost, c.e.timings.RenewDeadline, holder)
	}
	lease, err := c.e.api.Get(rctx)
	if err != nil {
		c.e.log.Info("Not releasing the Lease: failed to read it", "err", err.Error())
		return nil
	}
	if h := leasestate.Holder(lease); h != c.e.identity {
		c.e.log.Info("Not releasing the Lease: another candidate holds it", "holder", h)
		return fmt.Errorf("%w: the Lease is now held by %q", ErrLost, h)
	}
	now := metav1.NewMicroTime(c.e.clock.Now())
	lease.Spec.HolderIdentity = ptr.To("")
	lease.Spec.LeaseDurationSeconds = ptr.To(int32(1))
	lease.Spec.AcquireTime, lease.Spec.RenewTime = &now, &now
	if _, err := c.e.api.Update(rctx, lease); err != nil {
		if apierrors.IsConflict(err) {
			c.refresh(rctx)
			if h := leasestate.Holder(c.known); h != c.e.identity {
				return fmt.Errorf("%w: the Lease is now held by %q", ErrLost, h)
			}
		}
		c.e.log.Info("Failed to release the Lease", "err", err.Error())
		return nil
	}
	c.e.log.Info("Released the Lease")
	return nil
}

// unanswered tells an error the API server did not decide: a transport
// error, a timeout, or a 5xx or 429 answer. A leader whose renewals fail
// only this way is cut off, not refused.
func unanswered(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return true
	}
	code := status.Status().Code
	return code >= http.StatusInternalServerError || code == http.StatusTooManyRequests ||
		apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err)
}

func (e *Elector) setRenewed(renewed time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.status.LastRenew = renewed
}

func (e *Elector) setLeading(leading bool, renewed time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.status.Leading = leading
	if leading {
		e.status.LastRenew = renewed
	}
}
