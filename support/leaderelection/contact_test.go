package leaderelection

import (
	"errors"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// TestReadiness checks the election's readiness check from the outcomes of
// the candidate's own Lease requests.
func TestReadiness(t *testing.T) {
	t.Run("when the API server refuses the candidate's credentials, it is not ready at once", func(t *testing.T) {
		api, clk := newFakeAPI(), newClock()
		api.setFail("list", apierrors.NewUnauthorized("token expired"))
		c := start(t, api, clk, "a", false)
		c.settle(t)
		if err := c.e.Ready(nil); err == nil || !strings.Contains(err.Error(), "refuses") {
			t.Fatalf("Ready() = %v, want a refusal", err)
		}
		api.setFail("list", nil)
		clk.Step(timings.RetryPeriod)
		c.awaitLead(t)
		if err := c.e.Ready(nil); err != nil {
			t.Fatalf("once the API server answers, Ready() = %v", err)
		}
	})
	t.Run("when a leader's renewals fail for longer than the renew deadline, it is not ready", func(t *testing.T) {
		api, clk, a, _ := leader(t)
		unreachable := errors.New("dial tcp: connection refused")
		for _, verb := range []string{"get", "update", "list", "watch"} {
			api.setFail(verb, unreachable)
		}
		clk.Step(timings.Renew())
		a.settle(t)
		if err := a.e.Ready(nil); err != nil {
			t.Fatalf("a failure inside the renew deadline made it not ready: %v", err)
		}
		clk.Step(timings.RenewDeadline + time.Second)
		a.settle(t)
		if err := a.e.Ready(nil); err == nil || !strings.Contains(err.Error(), "longer than the renew deadline") {
			t.Fatalf("Ready() = %v, want not ready", err)
		}
	})
	t.Run("when a request conflicts, the API server answered: it stays ready", func(t *testing.T) {
		var c contact
		now := time.Unix(0, 0)
		c.record(now, errors.New("timeout"))
		c.record(now.Add(time.Hour), apierrors.NewConflict(leaseGR, "lease", errors.New("changed")))
		if !c.failingSince.IsZero() || c.refused != nil {
			t.Fatalf("a conflict left the contact failing since %s (refused: %v)", c.failingSince, c.refused)
		}
	})
}
