package leaderelection_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/hypershift-le/hypershift/support/leaderelection"
)

// TestShardQueueTakesOnlyItsShard: every way into a shard's queue drops
// the requests of other shards, keeps its own and those whose key is not
// known; the whole gets controller-runtime's default queue.
func TestShardQueueTakesOnlyItsShard(t *testing.T) {
	keyOf := func(_ context.Context, req reconcile.Request) (string, bool) {
		if req.Name == "unknown" {
			return "", false
		}
		return req.Namespace, true
	}
	for _, whole := range []leaderelection.Shard{{}, {Index: 0, Count: 1}} {
		if q := whole.NewQueue(keyOf); q != nil {
			t.Fatalf("shard %+v gets a queue of its own, not controller-runtime's default", whole)
		}
	}
	shard := leaderelection.Shard{Index: 2, Count: 4}
	if got := shard.Name("nodepool"); got != "nodepool-shard-2" {
		t.Errorf("shard 2's controller is named %q", got)
	}
	q := shard.NewQueue(keyOf)("nodepool-shard-2", workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	var mine, others []reconcile.Request
	for i := 0; len(mine) < 4 || len(others) < 4; i++ {
		req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: fmt.Sprintf("clusters-%d", i), Name: "demo"}}
		if leaderelection.ShardOf(req.Namespace, 4) == 2 {
			mine = append(mine, req)
		} else {
			others = append(others, req)
		}
	}
	// Not in the cache: it may be anybody's, it goes in (a no-op pass).
	mine = append(mine, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: others[0].Namespace, Name: "unknown"}})
	pq := q.(priorityqueue.PriorityQueue[reconcile.Request])
	adds := []func(reconcile.Request){
		q.Add,
		func(req reconcile.Request) { q.AddAfter(req, time.Millisecond) },
		q.AddRateLimited,
		func(req reconcile.Request) { pq.AddWithOpts(priorityqueue.AddOpts{}, req) },
		q.Add,
	}
	for i, add := range adds {
		add(others[i%len(others)])
		add(mine[i])
	}
	got := map[reconcile.Request]bool{}
	deadline := time.Now().Add(5 * time.Second)
	for len(got) < len(mine) && time.Now().Before(deadline) {
		req, _ := q.Get()
		got[req] = true
		q.Done(req)
	}
	for _, req := range mine {
		if !got[req] {
			t.Errorf("the shard's own %s was not queued", req)
		}
	}
	time.Sleep(50 * time.Millisecond)
	if n := q.Len(); n != 0 {
		t.Errorf("%d requests of other shards were queued", n)
	}
	for req := range got {
		if key, known := keyOf(t.Context(), req); known && leaderelection.ShardOf(key, 4) != 2 {
			t.Errorf("%s of another shard was queued", req)
		}
	}
}

// TestShardNames: a part's label and Lease carry its index (and the
// label its count); the whole, of either spelling, is "0-of-1" and owned
// through the one election's Lease.
func TestShardNames(t *testing.T) {
	for _, tc := range []struct {
		shard        leaderelection.Shard
		label, lease string
	}{
		{leaderelection.Shard{}, "0-of-1", "ho"},
		{leaderelection.Shard{Count: 1}, "0-of-1", "ho"},
		{leaderelection.Shard{Index: 0, Count: 2}, "0-of-2", "ho-shard-0"},
		{leaderelection.Shard{Index: 3, Count: 4}, "3-of-4", "ho-shard-3"},
	} {
		if got := tc.shard.Label(); got != tc.label {
			t.Errorf("%+v.Label() = %q, want %q", tc.shard, got, tc.label)
		}
		if got := tc.shard.LeaseName("ho"); got != tc.lease {
			t.Errorf("%+v.LeaseName(ho) = %q, want %q", tc.shard, got, tc.lease)
		}
	}
}
