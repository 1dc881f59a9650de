package hostedcluster

import (
	"fmt"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/leaderelection"
)

// Shards. With --shards=N the HostedClusters are split between N Leases
// (leaderelection.AddShards): a replica runs, for every shard it holds, a
// HostedCluster controller of its own whose work queue takes only the
// HostedClusters of that shard. The queue is the one place that filters:
// every watch, timer and wake-up of the controller enqueues through it.

// ForShard returns a reconciler for the HostedClusters of shard of shards,
// with r's settings and caches (SetupCaches must have run on r) and state
// of its own: shards are reconciled side by side, each in its own terms.
func (r *Reconciler) ForShard(shard, shards int) *Reconciler {
	return &Reconciler{
		Client:                           r.Client,
		APIReader:                        r.APIReader,
		Releases:                         r.Releases,
		DefaultControlPlaneOperatorImage: r.DefaultControlPlaneOperatorImage,
		ControlPlaneOperatorTimings:      r.ControlPlaneOperatorTimings,
		InsecureRegistries:               r.InsecureRegistries,
		Isolation:                        r.Isolation,
		Recorder:                         r.Recorder,
		Clock:                            r.Clock,
		TeardownTimeout:                  r.TeardownTimeout,
		Fencing:                          r.Fencing,
		Probe:                            r.Probe,
		ReleaseRecheckInterval:           r.ReleaseRecheckInterval,
		EnableMonitoring:                 r.EnableMonitoring,
		Heartbeats:                       r.Heartbeats,
		MaxConcurrentReconciles:          r.MaxConcurrentReconciles,
		Shard:                            shard,
		Shards:                           shards,

		kubeconfigs: r.kubeconfigs,
		pullSecrets: r.pullSecrets,
		secrets:     r.secrets,
		cache:       r.cache,
	}
}

// sharded reports whether the reconciler takes only one shard.
func (r *Reconciler) sharded() bool { return r.Shards > 1 }

// controllerName names the controller, and its queue's metrics and logs.
func (r *Reconciler) controllerName() string {
	if !r.sharded() {
		return "hostedcluster"
	}
	return fmt.Sprintf("hostedcluster-shard-%d", r.Shard)
}

// mine reports whether req is a HostedCluster of the reconciler's shard.
func (r *Reconciler) mine(req reconcile.Request) bool {
	return !r.sharded() || leaderelection.ShardOf(hyperv1.HostedClusterShardKey(req.Namespace, req.Name), r.Shards) == r.Shard
}

// newQueue makes, when sharded, controller-runtime's default queue (its
// priority queue) taking only the reconciler's shard; nil (the default
// queue) otherwise.
func (r *Reconciler) newQueue() func(string, workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	if !r.sharded() {
		return nil
	}
	return func(name string, limiter workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
		q := priorityqueue.New(name, func(o *priorityqueue.Opts[reconcile.Request]) { o.RateLimiter = limiter })
		return &shardQueue{PriorityQueue: q, mine: r.mine}
	}
}

// shardQueue drops the requests of other shards on their way in.
type shardQueue struct {
	priorityqueue.PriorityQueue[reconcile.Request]
	mine func(reconcile.Request) bool
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
