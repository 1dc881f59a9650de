package leaderelection

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/hypershift-le/hypershift/support/leasestate"
)

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

// retryWait is how long a cut-off candidate waits before renewing again.
func (c *campaign) retryWait() time.Duration {
	return c.retryAt.Sub(c.e.clock.Now())
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
