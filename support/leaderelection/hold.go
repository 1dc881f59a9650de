package leaderelection

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/hypershift-le/hypershift/support/leasestate"
)

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
