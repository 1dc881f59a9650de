package leasearbiter

import (
	"fmt"
	"testing"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/leaderelection"
	"github.com/hypershift-le/hypershift/support/testutil"
)

// TestShardsReleaseOnlyTheirOwnLeases: two arbiters, shards 0 and 1 of 2,
// each release the gone holders' Leases of their own shard's control
// planes, found through the namespace's cluster annotation, and never
// write another shard's.
func TestShardsReleaseOnlyTheirOwnLeases(t *testing.T) {
	const count = 2
	users := make([]string, count)
	for i := range users {
		users[i] = startArbiter(t, func(r *Reconciler) { r.Shard = leaderelection.Shard{Index: i, Count: count} })
	}
	var planes []*controlPlane
	perShard := make([]int, count)
	for perShard[0] < 2 || perShard[1] < 2 {
		if len(planes) == 20 {
			t.Fatalf("20 control planes fell into shards %v only", perShard)
		}
		cp := newControlPlane(t, fenced)
		planes = append(planes, cp)
		perShard[shardOf(cp, count)]++
	}
	for _, cp := range planes {
		cp.lease(t, hyperv1.ControlPlaneOperatorLeaseName, "cpo-ghost")
	}
	testutil.Eventually(t, 3*takeoverBound, func() error {
		for _, cp := range planes {
			if h := cp.holder(t, hyperv1.ControlPlaneOperatorLeaseName); h != "" {
				return fmt.Errorf("the Lease in %s (shard %d) is still held by %q", cp.ns, shardOf(cp, count), h)
			}
		}
		return nil
	})
	for _, cp := range planes {
		shard := shardOf(cp, count)
		for i, user := range users {
			writes := leaseWrites(t, user, cp.ns)
			switch {
			case i == shard && len(writes) == 0:
				t.Errorf("shard %d's arbiter did not release the Lease in %s, of its shard", i, cp.ns)
			case i != shard && len(writes) != 0:
				t.Errorf("shard %d's arbiter wrote the Lease in %s, of shard %d: %s", i, cp.ns, shard, describe(writes))
			}
		}
	}
}

func shardOf(cp *controlPlane, count int) int {
	return leaderelection.ShardOf(hyperv1.HostedClusterShardKey(cp.hc.Namespace, cp.hc.Name), count)
}
