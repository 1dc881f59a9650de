package leasearbiter

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"

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

// TestAnotherShardsLeaseLetInIsANoOp: the shard queue lets in a Lease
// whose namespace is not in the cache yet (its shard unknown); once the
// arbiter reads the namespace, a Lease of another shard's control plane is
// left alone, its gone holder included.
func TestAnotherShardsLeaseLetInIsANoOp(t *testing.T) {
	cp := newControlPlane(t, fenced)
	cp.lease(t, hyperv1.ControlPlaneOperatorLeaseName, "cpo-ghost")
	other := leaderelection.Shard{Index: 1 - shardOf(cp, 2), Count: 2}
	r := &Reconciler{Client: env.Client, APIReader: env.Client, Recorder: events.NewFakeRecorder(10), Fencing: true, Shard: other}
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: cp.ns, Name: hyperv1.ControlPlaneOperatorLeaseName}}
	for range 3 {
		if _, err := r.Reconcile(t.Context(), req); err != nil {
			t.Fatal(err)
		}
	}
	if h := cp.holder(t, hyperv1.ControlPlaneOperatorLeaseName); h != "cpo-ghost" {
		t.Errorf("shard %d's arbiter released the Lease of a control plane of shard %d: holder %q", other.Index, shardOf(cp, 2), h)
	}
}
