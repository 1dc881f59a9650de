package hostedcluster

import (
	"context"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/hypershift-le/hypershift/support/leasestate"
)

// leaseClock judges, on the HO's own clock, how long each control-plane-
// operator Lease has gone without a change: the way the node lifecycle
// controller judges node heartbeats and the elector's followers judge a
// holder, from the last change seen and never from the holder's renewTime,
// whose clock may be skewed (leasestate's rule). A renewal changes the
// Lease's resourceVersion; a Lease that has not changed for its lease
// duration has no valid holder, and its HostedCluster is woken so that
// status says so. Renewals are not reconciles: only a Lease going silent,
// or a change of holder, wakes one. The teardown asks it too, before it
// finalizes a HostedControlPlane no control-plane-operator finalized.
type leaseClock struct {
	clock clock.WithDelayedExecution
	// fallback is the lease duration of a Lease that declares none.
	fallback time.Duration
	// requests maps a Lease to the HostedClusters to wake.
	requests func(context.Context, client.Object) []reconcile.Request

	mu   sync.Mutex
	seen map[types.NamespacedName]*leaseSeen
}

// leaseSeen is the last change seen of one Lease.
type leaseSeen struct {
	leasestate.Sighting
	timer clock.Timer
	// first is true while the Lease has not changed since this process
	// first saw it: its silence before then is unknown to this clock.
	first bool
	// inherited is true when a pass took over a silence another process
	// reported (inheritSilence): the Lease's next change wakes its
	// HostedClusters, as the end of a silence this clock saw does.
	inherited bool
}

// silent reports whether the Lease key has gone unchanged for its lease
// duration, as seen since this process started.
func (c *leaseClock) silent(key types.NamespacedName) (bool, time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := c.seen[key]
	if seen == nil {
		return false, 0
	}
	return seen.Expired(c.clock.Now()), seen.Duration
}

// inheritSilence is silent for a Lease that has not changed since this
// process first saw it, when the caller knows, from
// status another process wrote, that the Lease was already silent then
// (after an HO failover, or a restart): the new leader's clock cannot tell
// for a whole lease duration, and saying "alive" meanwhile would show the
// HostedControlPlane's last, possibly stale, report as the truth. A holder
// that still renews changes the Lease within its retry period, and that
// change wakes the HostedClusters again: calling a live holder silent for
// one renewal is the safe error, the other one is not.
func (c *leaseClock) inheritSilence(lease *coordinationv1.Lease) (bool, time.Duration) {
	key, rv := client.ObjectKeyFromObject(lease), lease.ResourceVersion
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = map[types.NamespacedName]*leaseSeen{}
	}
	seen := c.seen[key]
	if seen == nil {
		// The pass read the Lease before its event reached the clock:
		// this is the first sighting.
		sighting, _ := leasestate.See(nil, lease, c.clock.Now(), c.fallback)
		seen = &leaseSeen{Sighting: sighting, first: true}
		c.seen[key] = seen
	}
	if !seen.first || seen.ResourceVersion != rv {
		return false, 0
	}
	seen.inherited = true
	return true, seen.Duration
}

// observe records a Lease as seen now when it changed, and arms a timer that
// wakes its HostedClusters once it has gone its lease duration without one.
// A change that ends a silence (one this clock saw, or one it inherited)
// wakes them at once: status said Unknown and must not wait for another
// reason to say otherwise.
func (c *leaseClock) observe(ctx context.Context, lease *coordinationv1.Lease, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	key := client.ObjectKeyFromObject(lease)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = map[types.NamespacedName]*leaseSeen{}
	}
	now := c.clock.Now()
	var last *leasestate.Sighting
	prev := c.seen[key]
	if prev != nil {
		last = &prev.Sighting
	}
	sighting, changed := leasestate.See(last, lease, now, c.fallback)
	if !changed {
		if prev != nil && prev.timer == nil {
			// Recorded first by inheritSilence: arm its timer now.
			prev.Duration = sighting.Duration
			prev.timer = c.after(ctx, lease, queue, prev.Expiry().Sub(now))
		}
		return
	}
	if prev != nil {
		if prev.timer != nil {
			prev.timer.Stop()
		}
		if prev.inherited || prev.Expired(now) {
			for _, request := range c.requests(ctx, lease) {
				queue.Add(request)
			}
		}
	}
	c.seen[key] = &leaseSeen{
		Sighting: sighting,
		first:    prev == nil,
		timer:    c.after(ctx, lease, queue, sighting.Duration),
	}
}

// after wakes the HostedClusters of lease a moment past d, so that silent
// agrees when it fires.
func (c *leaseClock) after(ctx context.Context, lease *coordinationv1.Lease, queue workqueue.TypedRateLimitingInterface[reconcile.Request], d time.Duration) clock.Timer {
	requests := c.requests(ctx, lease)
	return c.clock.AfterFunc(d+100*time.Millisecond, func() {
		for _, request := range requests {
			queue.Add(request)
		}
	})
}

// forget drops a deleted Lease.
func (c *leaseClock) forget(lease client.Object) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := client.ObjectKeyFromObject(lease)
	if seen := c.seen[key]; seen != nil {
		if seen.timer != nil {
			seen.timer.Stop()
		}
		delete(c.seen, key)
	}
}

// handler observes every Lease event, renewals included, and wakes the
// HostedClusters of a Lease at once when its holder changes.
func (c *leaseClock) handler() handler.TypedEventHandler[client.Object, reconcile.Request] {
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	enqueue := func(ctx context.Context, obj client.Object, q queue) {
		for _, request := range c.requests(ctx, obj) {
			q.Add(request)
		}
	}
	return handler.TypedFuncs[client.Object, reconcile.Request]{
		CreateFunc: func(ctx context.Context, e event.TypedCreateEvent[client.Object], q queue) {
			if lease, ok := e.Object.(*coordinationv1.Lease); ok {
				c.observe(ctx, lease, q)
			}
			enqueue(ctx, e.Object, q)
		},
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[client.Object], q queue) {
			if lease, ok := e.ObjectNew.(*coordinationv1.Lease); ok {
				c.observe(ctx, lease, q)
			}
			if leadershipChanged.Update(e) {
				enqueue(ctx, e.ObjectNew, q)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.TypedDeleteEvent[client.Object], q queue) {
			c.forget(e.Object)
			enqueue(ctx, e.Object, q)
		},
	}
}
