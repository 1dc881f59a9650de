package leaderelection

import (
	"context"
	"errors"
	"time"
)

// term is one holding's leader-only work: started when the candidate
// acquires or renews its way back to the Lease, stopped before the holding
// may end. A candidate cut off from the API server has no term; it gets a
// new one when it leads again.
type term struct {
	e      *Elector
	cancel context.CancelFunc
	// done is closed when the work returned, with result.
	done   chan struct{}
	result error
}

// startTerm runs lead in a term of its own.
func (c *campaign) startTerm(ctx context.Context, lead func(context.Context) error) *term {
	c.e.setLeading(true, c.renewedAt)
	tctx, cancel := context.WithCancel(ctx)
	t := &term{e: c.e, cancel: cancel, done: make(chan struct{})}
	go func() {
		t.result = lead(tctx)
		close(t.done)
	}()
	return t
}

// stop cancels the work and waits for it, at most for bound: it must not
// outlast the holding it belongs to.
func (t *term) stop(bound time.Duration) {
	t.cancel()
	timer := t.e.clock.NewTimer(max(bound, 0))
	defer timer.Stop()
	select {
	case <-t.done:
		if t.result != nil && !errors.Is(t.result, context.Canceled) {
			t.e.log.Info("Leader-only work failed while stopping", "err", t.result)
		}
	case <-timer.C():
		t.e.log.Info("Leader-only work did not stop in time", "waited", bound)
	}
	t.e.setLeading(false, time.Time{})
}
