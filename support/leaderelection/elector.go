package leaderelection

import (
	"context"
	"errors"
	"fmt"
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
	Timings config.LeaderElection
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
	timings   config.LeaderElection
	clock     clock.WithTicker
	log       logr.Logger
	release   bool

	mu     sync.Mutex
	status Status

	contact contact

	// onWait, in tests, learns each wait before the loop blocks: how long
	// until it acts, or false for "until an observation".
	onWait func(time.Duration, bool)
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
	// Transitions counts the holder changes this candidate saw.
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
// that ends when leadership does. When ctx ends, it waits for lead to return
// and releases the Lease, then returns nil; if it finds then that it had
// already lost the Lease, it returns an error wrapping ErrLost. When it
// stops leading for any other reason, it returns an error wrapping ErrLost
// at once; when lead returns while it leads, it releases and returns lead's
// error.
func (e *Elector) Run(ctx context.Context, lead func(context.Context) error) error {
	obsCtx, stopObserving := context.WithCancel(ctx)
	defer stopObserving()
	observations := make(chan observation)
	go e.observe(obsCtx, observations)

	c := &campaign{Elector: e}
	timer := e.clock.NewTimer(time.Hour)
	defer timer.Stop()
	var leadCancel context.CancelFunc
	var leadDone chan error
	// stopLeading cancels the leader-only work and waits for it, at most
	// for bound: it must not outlast the holding it belongs to.
	stopLeading := func(bound time.Duration) {
		if leadCancel == nil {
			return
		}
		leadCancel()
		if leadDone != nil {
			t := e.clock.NewTimer(max(bound, 0))
			select {
			case err := <-leadDone:
				if err != nil && !errors.Is(err, context.Canceled) {
					e.log.Info("Leader-only work failed while stopping", "err", err.Error())
				}
			case <-t.C():
				e.log.Info("Leader-only work did not stop in time", "waited", bound)
			}
			t.Stop()
		}
		leadCancel, leadDone = nil, nil
		e.setLeading(false, time.Time{})
	}
	// After a loss the work has the skew margin to stop: the time the
	// timing rule leaves between this leader's deadline and a takeover.
	lost := func(why string) error {
		e.log.Info("Stopped leading: "+why, "holder", holderOf(c.known))
		stopLeading(e.timings.SkewMargin())
		return fmt.Errorf("%w: %s", ErrLost, why)
	}
	// On a graceful stop, the work may take until the renew deadline; the
	// Lease is released only once it stopped, and only before the deadline.
	untilDeadline := func() time.Duration {
		return c.renewedAt.Add(e.timings.RenewDeadline).Sub(e.clock.Now())
	}

	for {
		// act fires when it is time to acquire or renew: at once, after
		// the timer, or never before the next observation.
		var act <-chan time.Time
		wait, ok := c.nextWait()
		switch {
		case ok && wait <= 0:
			now := make(chan time.Time, 1)
			now <- e.clock.Now()
			act = now
		case ok:
			timer.Reset(wait)
			act = timer.C()
		}
		if e.onWait != nil {
			e.onWait(wait, ok)
		}
		select {
		case <-ctx.Done():
			if !c.leading {
				return nil
			}
			stopLeading(untilDeadline())
			if !e.release {
				return nil
			}
			return c.releaseLease(ctx)

		case o := <-observations:
			c.apply(o)
			if c.leading {
				if c.known == nil {
					return lost("the Lease was deleted")
				}
				if h := holderOf(c.known); h != e.identity {
					return lost(fmt.Sprintf("the Lease is now held by %q", h))
				}
			}

		case <-act:
			if !c.leading {
				if c.tryAcquire(ctx) {
					leadCtx, cancel := context.WithCancel(ctx)
					leadCancel, leadDone = cancel, make(chan error, 1)
					go func(done chan<- error) { done <- lead(leadCtx) }(leadDone)
				}
				continue
			}
			if e.clock.Now().Sub(c.renewedAt) >= e.timings.RenewDeadline {
				return lost(fmt.Sprintf("no renewal succeeded within the renew deadline (%s); the Lease is held by %q", e.timings.RenewDeadline, c.currentHolder(ctx)))
			}
			if why := c.renew(ctx); why != "" {
				return lost(why)
			}

		case err := <-leadDone:
			leadDone = nil
			e.log.Info("Leader-only work ended; releasing the Lease", "err", err)
			stopLeading(0)
			if e.release {
				if lostErr := c.releaseLease(ctx); lostErr != nil {
					return errors.Join(err, lostErr)
				}
			}
			return err
		}
	}
}

// campaign is the state of one Run, owned by its goroutine.
type campaign struct {
	*Elector
	// known is the newest Lease seen (nil: missing), at resourceVersion
	// knownRV, first seen at knownAt on the local clock.
	known   *coordinationv1.Lease
	knownRV string
	knownAt time.Time
	seen    bool
	// leading, with renewedAt the start of the last successful
	// acquisition or renewal.
	leading   bool
	renewedAt time.Time
	// retryAt, when set, is when to try again after a failed request.
	retryAt time.Time
}

// nextWait is how long to wait before acting; false means wait for an
// observation.
func (c *campaign) nextWait() (time.Duration, bool) {
	now := c.clock.Now()
	if c.leading {
		next := c.renewedAt.Add(c.timings.Renew())
		if !c.retryAt.IsZero() {
			next = c.retryAt
		}
		if deadline := c.renewedAt.Add(c.timings.RenewDeadline); deadline.Before(next) {
			next = deadline
		}
		return next.Sub(now), true
	}
	if !c.seen {
		return 0, false
	}
	next := now
	if h := holderOf(c.known); c.known != nil && h != "" && h != c.identity {
		next = c.knownAt.Add(leaseDuration(c.known, c.timings.LeaseDuration))
	}
	if c.retryAt.After(next) {
		next = c.retryAt
	}
	return next.Sub(now), true
}

// apply records o unless it is not newer than what is known: watch events
// can arrive after the response to a newer write. Versions that do not
// compare are taken as newer.
func (c *campaign) apply(o observation) {
	if c.seen && c.knownRV != "" && o.rv != "" {
		if cmp, err := resourceversion.CompareResourceVersion(o.rv, c.knownRV); err == nil && cmp <= 0 {
			return
		}
	}
	previous := holderOf(c.known)
	c.known, c.knownRV, c.knownAt, c.seen = o.lease, o.rv, c.clock.Now(), true
	c.retryAt = time.Time{}
	holder := holderOf(c.known)
	c.mu.Lock()
	if holder != previous {
		c.status.Transitions++
	}
	c.status.Holder = holder
	c.mu.Unlock()
	if holder != previous {
		c.log.V(1).Info("The Lease's holder changed", "from", previous, "to", holder)
	}
}

// tryAcquire takes the Lease with a create or a compare-and-swap update.
func (c *campaign) tryAcquire(ctx context.Context) bool {
	start := c.clock.Now()
	rctx, cancel := context.WithTimeout(ctx, c.timings.RequestTimeout())
	defer cancel()
	now := metav1.NewMicroTime(start)
	var result *coordinationv1.Lease
	var err error
	if c.known == nil {
		result, err = c.api.Create(rctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: c.name, Namespace: c.namespace},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       ptr.To(c.identity),
				LeaseDurationSeconds: ptr.To(int32(c.timings.LeaseDuration / time.Second)),
				AcquireTime:          &now,
				RenewTime:            &now,
				LeaseTransitions:     ptr.To(int32(0)),
			},
		})
	} else {
		lease := c.known.DeepCopy()
		if holderOf(lease) != c.identity {
			lease.Spec.LeaseTransitions = ptr.To(ptr.Deref(lease.Spec.LeaseTransitions, 0) + 1)
			lease.Spec.AcquireTime = &now
		}
		lease.Spec.HolderIdentity = ptr.To(c.identity)
		lease.Spec.LeaseDurationSeconds = ptr.To(int32(c.timings.LeaseDuration / time.Second))
		lease.Spec.RenewTime = &now
		result, err = c.api.Update(rctx, lease)
	}
	switch {
	case err == nil:
		c.apply(observation{lease: result, rv: result.ResourceVersion})
		c.leading, c.renewedAt, c.retryAt = true, start, time.Time{}
		c.setLeading(true, start)
		c.log.Info("Acquired the Lease", "transitions", ptr.Deref(result.Spec.LeaseTransitions, 0))
		return true
	case apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err):
		c.log.V(1).Info("Another candidate wrote the Lease first; reading it")
		c.refresh(ctx)
	case apierrors.IsNotFound(err):
		c.known = nil
	default:
		c.log.Info("Failed to acquire the Lease; retrying", "err", err.Error(), "retryIn", c.timings.RetryPeriod)
	}
	c.retryAt = c.clock.Now().Add(c.timings.RetryPeriod)
	return false
}

// renew renews the held Lease with a compare-and-swap on its last write.
// It returns why leadership is lost, or "".
func (c *campaign) renew(ctx context.Context) string {
	start := c.clock.Now()
	deadline := c.renewedAt.Add(c.timings.RenewDeadline)
	rctx, cancel := context.WithTimeout(ctx, min(c.timings.RequestTimeout(), deadline.Sub(start)))
	defer cancel()
	lease := c.known.DeepCopy()
	now := metav1.NewMicroTime(start)
	lease.Spec.RenewTime = &now
	lease.Spec.LeaseDurationSeconds = ptr.To(int32(c.timings.LeaseDuration / time.Second))
	result, err := c.api.Update(rctx, lease)
	switch {
	case err == nil:
		c.apply(observation{lease: result, rv: result.ResourceVersion})
		c.renewedAt, c.retryAt = start, time.Time{}
		c.setLeading(true, start)
		return ""
	case apierrors.IsNotFound(err):
		return "the Lease was deleted"
	case apierrors.IsConflict(err):
		// Another write: ours that timed out but landed, or a new holder.
		c.refresh(rctx)
		if c.known == nil {
			return "the Lease was deleted"
		}
		if h := holderOf(c.known); h != c.identity {
			return fmt.Sprintf("the Lease is now held by %q", h)
		}
	default:
		c.log.Info("Failed to renew the Lease; retrying until the renew deadline", "err", err.Error(),
			"retryIn", c.timings.RetryPeriod, "deadline", deadline.Sub(c.clock.Now()).Round(time.Millisecond))
	}
	c.retryAt = c.clock.Now().Add(c.timings.RetryPeriod)
	return ""
}

// currentHolder reads the Lease's holder, for the account of a loss:
// "unknown" when the API server does not answer within a request timeout.
func (c *campaign) currentHolder(ctx context.Context) string {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.timings.RequestTimeout())
	defer cancel()
	lease, err := c.api.Get(rctx)
	if err != nil {
		return "unknown"
	}
	return holderOf(lease)
}

// refresh reads the Lease after a conflict.
func (c *campaign) refresh(ctx context.Context) {
	rctx, cancel := context.WithTimeout(ctx, c.timings.RequestTimeout())
	defer cancel()
	lease, err := c.api.Get(rctx)
	switch {
	case err == nil:
		c.apply(observation{lease: lease, rv: lease.ResourceVersion})
	case apierrors.IsNotFound(err):
		c.known = nil
	default:
		c.log.Info("Failed to read the Lease", "err", err.Error())
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
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.timings.RequestTimeout())
	defer cancel()
	if left := c.renewedAt.Add(c.timings.RenewDeadline).Sub(c.clock.Now()); left <= 0 {
		holder := c.currentHolder(rctx)
		c.log.Info("Not releasing the Lease: the renew deadline passed", "holder", holder)
		return fmt.Errorf("%w: no renewal succeeded within the renew deadline (%s) before the stop; the Lease is held by %q", ErrLost, c.timings.RenewDeadline, holder)
	}
	lease, err := c.api.Get(rctx)
	if err != nil {
		c.log.Info("Not releasing the Lease: failed to read it", "err", err.Error())
		return nil
	}
	if h := holderOf(lease); h != c.identity {
		c.log.Info("Not releasing the Lease: another candidate holds it", "holder", h)
		return fmt.Errorf("%w: the Lease is now held by %q", ErrLost, h)
	}
	now := metav1.NewMicroTime(c.clock.Now())
	lease.Spec.HolderIdentity = ptr.To("")
	lease.Spec.LeaseDurationSeconds = ptr.To(int32(1))
	lease.Spec.AcquireTime, lease.Spec.RenewTime = &now, &now
	if _, err := c.api.Update(rctx, lease); err != nil {
		if apierrors.IsConflict(err) {
			c.refresh(rctx)
			if h := holderOf(c.known); h != c.identity {
				return fmt.Errorf("%w: the Lease is now held by %q", ErrLost, h)
			}
		}
		c.log.Info("Failed to release the Lease", "err", err.Error())
		return nil
	}
	c.log.Info("Released the Lease")
	return nil
}

func (e *Elector) setLeading(leading bool, renewed time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.status.Leading = leading
	if leading {
		e.status.LastRenew = renewed
	}
}

func holderOf(lease *coordinationv1.Lease) string {
	if lease == nil {
		return ""
	}
	return ptr.Deref(lease.Spec.HolderIdentity, "")
}

// leaseDuration is the holder's declared duration, or fallback.
func leaseDuration(lease *coordinationv1.Lease, fallback time.Duration) time.Duration {
	if s := ptr.Deref(lease.Spec.LeaseDurationSeconds, 0); s > 0 {
		return time.Duration(s) * time.Second
	}
	return fallback
}
