package leaderelection

import (
	"context"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/watch"
)

// observation is what a candidate learnt about the Lease.
type observation struct {
	// lease is nil when the Lease does not exist.
	lease *coordinationv1.Lease
	// rv is the Lease's resourceVersion, or, when it does not exist, that
	// of the list or deletion that showed it.
	rv string
	// resumed is set on the first observation after the observer could
	// not list or watch the Lease: what it knows is new again. Alone (no
	// lease, no rv), it says only that the watch is back.
	resumed bool
	// blind, alone, says that the observer cannot list or watch the Lease
	// now: until it resumes, the candidate does not know what happens.
	blind bool
}

// minWatchLife is how long a watch must have lasted for the observer to
// restart it at once when it ends; a shorter one is restarted after a
// retry period, so that a server closing watches at once is not hammered.
const minWatchLife = time.Second

// observe sends every change of the Lease to out until ctx ends: one list,
// then a watch resumed from the last resourceVersion it saw, and a new list
// only when the server no longer has that version (410 Gone).
func (e *Elector) observe(ctx context.Context, out chan<- observation) {
	rv := ""
	// gap is set while the observer could not list or watch the Lease.
	gap := false
	for ctx.Err() == nil {
		if rv == "" {
			lctx, cancel := context.WithTimeout(ctx, e.timings.RequestTimeout())
			lease, listRV, err := e.api.List(lctx)
			cancel()
			if err != nil {
				e.log.Info("Failed to list the Lease; retrying", "err", err.Error())
				if !gap && !send(ctx, out, observation{blind: true}) {
					return
				}
				gap = true
				e.sleep(ctx, e.timings.RetryPeriod)
				continue
			}
			o := observation{lease: lease, rv: listRV, resumed: gap}
			if lease != nil {
				o.rv = lease.ResourceVersion
			}
			if !send(ctx, out, o) {
				return
			}
			rv, gap = listRV, false
		}
		started := e.clock.Now()
		w, err := e.api.Watch(ctx, rv)
		if err != nil {
			if apierrors.IsGone(err) || apierrors.IsResourceExpired(err) {
				rv = ""
				continue
			}
			e.log.Info("Failed to watch the Lease; retrying", "err", err.Error())
			if !gap && !send(ctx, out, observation{blind: true}) {
				return
			}
			gap = true
			e.sleep(ctx, e.timings.RetryPeriod)
			continue
		}
		if gap {
			if !send(ctx, out, observation{resumed: true}) {
				w.Stop()
				return
			}
			gap = false
		}
		rv = e.drain(ctx, w, out, rv)
		w.Stop()
		if e.clock.Since(started) < minWatchLife {
			e.sleep(ctx, e.timings.RetryPeriod)
		}
	}
}

// drain forwards w's events to out and returns the resourceVersion to
// resume from: "" when the watch said it is too old.
func (e *Elector) drain(ctx context.Context, w watch.Interface, out chan<- observation, rv string) string {
	for {
		var ev watch.Event
		var ok bool
		select {
		case <-ctx.Done():
			return rv
		case ev, ok = <-w.ResultChan():
			if !ok {
				return rv
			}
		}
		switch ev.Type {
		case watch.Added, watch.Modified:
			lease, isLease := ev.Object.(*coordinationv1.Lease)
			if !isLease {
				continue
			}
			rv = lease.ResourceVersion
			if !send(ctx, out, observation{lease: lease, rv: rv}) {
				return rv
			}
		case watch.Deleted:
			if obj, err := meta.Accessor(ev.Object); err == nil {
				rv = obj.GetResourceVersion()
			}
			if !send(ctx, out, observation{rv: rv}) {
				return rv
			}
		case watch.Bookmark:
			if obj, err := meta.Accessor(ev.Object); err == nil {
				rv = obj.GetResourceVersion()
			}
		case watch.Error:
			err := apierrors.FromObject(ev.Object)
			if apierrors.IsGone(err) || apierrors.IsResourceExpired(err) {
				return ""
			}
			e.log.Info("The Lease's watch failed; resuming it", "err", err.Error())
			return rv
		}
	}
}

func send(ctx context.Context, out chan<- observation, o observation) bool {
	select {
	case out <- o:
		return true
	case <-ctx.Done():
		return false
	}
}

func (e *Elector) sleep(ctx context.Context, d time.Duration) {
	t := e.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C():
	}
}
