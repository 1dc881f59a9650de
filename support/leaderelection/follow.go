package leaderelection

import (
	"context"
	"maps"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/hypershift-le/hypershift/support/leasestate"
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
			if c.e.contend != nil && !c.e.contend() {
				c.retryAt = c.e.clock.Now().Add(c.e.timings.RetryPeriod)
				continue
			}
			if c.tryAcquire(ctx) {
				return holding, nil
			}
		}
	}
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
			ObjectMeta: metav1.ObjectMeta{Name: c.e.name, Namespace: c.e.namespace, Annotations: maps.Clone(c.e.annotate)},
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
		if len(c.e.annotate) > 0 {
			if lease.Annotations == nil {
				lease.Annotations = map[string]string{}
			}
			maps.Copy(lease.Annotations, c.e.annotate)
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
