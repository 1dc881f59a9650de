package leaderelection

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Shard is the shard a controller runs for (AddShards): Index of Count.
// Its zero value, and any Count of 1, is the whole: every key.
//
// A sharded controller takes only its shard's requests through its work
// queue (NewQueue), the one place every watch, timer and wake-up of a
// controller enqueues through, so that no path into the controller
// forgets the filter.
type Shard struct {
	Index, Count int
}

// Sharded reports whether s is a part, not the whole.
func (s Shard) Sharded() bool { return s.Count > 1 }

// Has reports whether key belongs to s.
func (s Shard) Has(key string) bool {
	return !s.Sharded() || ShardOf(key, s.Count) == s.Index
}

// Name names a controller running for s: name itself for the whole,
// name-shard-<index> for a part, so that its queue's metrics and logs say
// which.
func (s Shard) Name(name string) string {
	if !s.Sharded() {
		return name
	}
	return fmt.Sprintf("%s-shard-%d", name, s.Index)
}

// Label is s as a label value, "<index>-of-<count>" (the hypershift-
// operator's OperatorShardLabel), "0-of-1" for the whole: the count is
// part of it, so that a label set under another count selects no binding
// of this one.
func (s Shard) Label() string {
	if !s.Sharded() {
		return "0-of-1"
	}
	return fmt.Sprintf("%d-of-%d", s.Index, s.Count)
}

// LeaseName names the Lease that owns s, among the Leases based on name:
// name itself for the whole (the one election), ShardLeaseName for a part.
func (s Shard) LeaseName(name string) string {
	if !s.Sharded() {
		return name
	}
	return ShardLeaseName(name, s.Index)
}

// KeyOf gives the shard key of a request, false when it cannot tell (the
// object is not in the cache). It reads the manager's cache only: it runs
// on every enqueue.
type KeyOf func(context.Context, reconcile.Request) (string, bool)

// NewQueue returns, for a part, controller-runtime's default queue (its
// priority queue) taking only the requests whose key, as keyOf gives it,
// belongs to s; nil (the default queue) for the whole. A request whose key
// keyOf cannot tell goes in: the controller must find such a request a
// no-op, which it is when the object is gone, and otherwise by asking Has
// again once it has read what the key comes from (the object may have
// reached the cache since), so that the shards that do not own it write
// nothing.
func (s Shard) NewQueue(keyOf KeyOf) func(string, workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	if !s.Sharded() {
		return nil
	}
	return func(name string, limiter workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
		q := priorityqueue.New(name, func(o *priorityqueue.Opts[reconcile.Request]) { o.RateLimiter = limiter })
		// A queue's Add takes no context: keyOf's cache reads get the
		// queue's, which ends when the queue shuts down.
		ctx, cancel := context.WithCancel(context.Background()) //nolint:forbidigo // the queue is the root of its own reads
		return &shardQueue{PriorityQueue: q, mine: func(req reconcile.Request) bool {
			key, ok := keyOf(ctx, req)
			return !ok || s.Has(key)
		}, cancel: cancel}
	}
}

// shardQueue drops the requests of other shards on their way in.
type shardQueue struct {
	priorityqueue.PriorityQueue[reconcile.Request]
	mine   func(reconcile.Request) bool
	cancel context.CancelFunc
}

func (q *shardQueue) ShutDown() {
	q.cancel()
	q.PriorityQueue.ShutDown()
}

func (q *shardQueue) ShutDownWithDrain() {
	q.cancel()
	q.PriorityQueue.ShutDownWithDrain()
}

func (q *shardQueue) Add(req reconcile.Request) {
	if q.mine(req) {
		q.PriorityQueue.Add(req)
	}
}

func (q *shardQueue) AddAfter(req reconcile.Request, d time.Duration) {
	if q.mine(req) {
		q.PriorityQueue.AddAfter(req, d)
	}
}

func (q *shardQueue) AddRateLimited(req reconcile.Request) {
	if q.mine(req) {
		q.PriorityQueue.AddRateLimited(req)
	}
}

func (q *shardQueue) AddWithOpts(o priorityqueue.AddOpts, reqs ...reconcile.Request) {
	kept := reqs[:0:0]
	for _, req := range reqs {
		if q.mine(req) {
			kept = append(kept, req)
		}
	}
	if len(kept) > 0 {
		q.PriorityQueue.AddWithOpts(o, kept...)
	}
}
