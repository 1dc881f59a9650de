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

// observe records a Lease as seen now when it changed, and arms a timer that
// wakes its HostedClusters once it has gone its lease duration without one.
func (c *leaseClock) observe(ctx context.Context, lease *coordinationv1.Lease, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	key := client.ObjectKeyFromObject(lease)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = map[types.NamespacedName]*leaseSeen{}
	}
	var last *leasestate.Sighting
	if seen := c.seen[key]; seen != nil {
		last = &seen.Sighting
	}
	sighting, changed := leasestate.See(last, lease, c.clock.Now(), c.fallback)
	if !changed {
		return
	}
	if seen := c.seen[key]; seen != nil {
		seen.timer.Stop()
	}
	requests := c.requests(ctx, lease)
	c.seen[key] = &leaseSeen{
		Sighting: sighting,
		// A moment past the duration, so that silent agrees when it fires.
		timer: c.clock.AfterFunc(sighting.Duration+100*time.Millisecond, func() {
			for _, request := range requests {
				queue.Add(request)
			}
		}),
	}
}

// forget drops a deleted Lease.
func (c *leaseClock) forget(lease client.Object) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := client.ObjectKeyFromObject(lease)
	if seen := c.seen[key]; seen != nil {
		seen.timer.Stop()
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
