package leaderelection

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/utils/clock"

	"github.com/hypershift-le/hypershift/support/leasestate"
)

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
