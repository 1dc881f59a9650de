package operator_test

import (
	"fmt"
	"strconv"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/leaderelection"
	"github.com/hypershift-le/hypershift/support/releaseinfo/releasetest"
	"github.com/hypershift-le/hypershift/support/testutil"
	"github.com/hypershift-le/hypershift/test/auditlog"
)

const shardCount = 4

func shardLease(shard int) string {
	return leaderelection.ShardLeaseName(hyperv1.HypershiftOperatorLeaseName, shard)
}

func shardOf(hc *hyperv1.HostedCluster) int {
	return shardAmong(hc, shardCount)
}

// shardAmong is hc's shard among count.
func shardAmong(hc *hyperv1.HostedCluster, count int) int {
	return leaderelection.ShardOf(hyperv1.HostedClusterShardKey(hc.Namespace, hc.Name), count)
}

// clustersInEveryShard creates HostedClusters, each with a NodePool and an
// EtcdBackup, until there is one in each of count shards.
func clustersInEveryShard(t *testing.T, registry *releasetest.Registry, image string, count int) []*hyperv1.HostedCluster {
	t.Helper()
	var clusters []*hyperv1.HostedCluster
	covered := map[int]bool{}
	for len(covered) < count {
		if len(clusters) == 10*count {
			t.Fatalf("%d HostedClusters covered only shards %v of %d", len(clusters), covered, count)
		}
		hc := newClusterWithPoolAndBackup(t, registry, image)
		clusters = append(clusters, hc)
		covered[shardAmong(hc, count)] = true
	}
	return clusters
}

// awaitShards waits until each shard's Lease is held by want[shard].
func awaitShards(t *testing.T, namespace string, want []string, within time.Duration) {
	t.Helper()
	testutil.Eventually(t, within, func() error {
		for shard, pod := range want {
			if h := env.Holder(t, namespace, shardLease(shard)); h != pod {
				return fmt.Errorf("shard %d is held by %q, want %s", shard, h, pod)
			}
		}
		return nil
	})
}

// TestShardedOperators runs two hypershift-operator processes with four
// shards: they split the shards, each HostedCluster is written for only by
// the holder of its shard's Lease (audit log), its NodePool and EtcdBackup
// included, and when one is killed its shards move to the survivor, which
// reconciles their HostedClusters.
func TestShardedOperators(t *testing.T) {
	hoNamespace := env.Namespace(t)
	a := startProcess(t, hoNamespace, "ho-shards-a", "hypershift-operator-a", fmt.Sprintf("--shards=%d", shardCount))
	awaitShards(t, hoNamespace, []string{a.Pod, a.Pod, a.Pod, a.Pod}, 30*time.Second)
	b := startProcess(t, hoNamespace, "ho-shards-b", "hypershift-operator-b", fmt.Sprintf("--shards=%d", shardCount))
	// The shards go in turn to the live replicas sorted by name.
	awaitShards(t, hoNamespace, []string{a.Pod, b.Pod, a.Pod, b.Pod}, 30*time.Second)
	// The HO Lease says how many shards there are (`hypershift get leaders`).
	hoLease := &coordinationv1.Lease{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: hoNamespace, Name: hyperv1.HypershiftOperatorLeaseName}, hoLease); err != nil {
		t.Fatal(err)
	}
	if got := hoLease.Annotations[hyperv1.OperatorShardsAnnotation]; got != strconv.Itoa(shardCount) {
		t.Errorf("the HO Lease's %s is %q, want %d", hyperv1.OperatorShardsAnnotation, got, shardCount)
	}

	// HostedClusters in every shard.
	registry := releasetest.NewRegistry(t)
	image, _ := registry.PushRelease(t, "ocp-release:4.17.0", "4.17.0", map[string]string{"hypershift": registry.Host() + "/hypershift:4.17.0"})
	clusters := clustersInEveryShard(t, registry, image, shardCount)
	awaitReconciled(t, clusters...)

	users := map[string]string{a.user: a.Pod, b.user: b.Pod}
	t.Run("each HostedCluster is written for by its shard's holder only", func(t *testing.T) {
		byUser := assertWritesFromShardHolders(t, hoNamespace, clusters, users)
		if byUser[a.user] == 0 || byUser[b.user] == 0 {
			t.Fatalf("writes for the HostedClusters by user: %v; both replicas must work for the check to mean anything", byUser)
		}
		// The NodePools' and EtcdBackups' writers count among them: a
		// pool or backup of every shard was written for.
		shardOfNamespace := map[string]int{}
		for _, hc := range clusters {
			shardOfNamespace[hc.Namespace] = shardOf(hc)
		}
		shardsByResource := map[string]map[int]bool{"nodepools": {}, "etcdbackups": {}}
		for _, w := range auditlog.Writes(mustAuditEvents(t), auditlog.Query{Users: []string{a.user, b.user}, SucceededOnly: true}) {
			if shard, ok := shardOfNamespace[w.Namespace]; ok && shardsByResource[w.Resource] != nil {
				shardsByResource[w.Resource][shard] = true
			}
		}
		for resource, shards := range shardsByResource {
			if len(shards) != shardCount {
				t.Errorf("%s of shards %v only were written for; the check proves nothing for the others", resource, shards)
			}
		}
	})

	t.Run("when a replica is killed, its shards move to the survivor", func(t *testing.T) {
		killed := time.Now()
		if err := b.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		// The member Lease and the shard Leases go silent for the 6s lease
		// duration, then the survivor takes them.
		awaitShards(t, hoNamespace, []string{a.Pod, a.Pod, a.Pod, a.Pod}, 30*time.Second)
		t.Logf("the survivor held every shard %s after the kill", time.Since(killed).Round(100*time.Millisecond))
		// A new HostedCluster of a shard the killed replica held.
		var moved *hyperv1.HostedCluster
		for moved == nil {
			if hc := newClusterWithPoolAndBackup(t, registry, image); shardOf(hc) == 1 || shardOf(hc) == 3 {
				moved = hc
			} else {
				clusters = append(clusters, hc)
			}
		}
		clusters = append(clusters, moved)
		awaitReconciled(t, clusters...)
		assertWritesFromShardHolders(t, hoNamespace, clusters, users)
		for _, w := range writes(t, b.user) {
			if w.At.After(killed.Add(time.Second)) {
				t.Errorf("the killed replica wrote after its kill: %v", w)
			}
		}
	})
}

// newClusterWithPoolAndBackup creates a HostedCluster with a NodePool and
// an EtcdBackup.
func newClusterWithPoolAndBackup(t *testing.T, registry *releasetest.Registry, image string) *hyperv1.HostedCluster {
	t.Helper()
	hc := newHostedCluster(t, registry, image)
	pool := &hyperv1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Namespace: hc.Namespace, Name: "workers"},
		Spec: hyperv1.NodePoolSpec{
			ClusterName: hc.Name,
			Release:     hc.Spec.Release,
			Platform:    hyperv1.NodePoolPlatform{Type: hyperv1.NonePlatform},
			Management:  hyperv1.NodePoolManagement{UpgradeType: hyperv1.UpgradeTypeReplace},
		},
	}
	backup := &hyperv1.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: hc.Namespace, Name: "nightly"},
		Spec: hyperv1.EtcdBackupSpec{
			ClusterName: hc.Name,
			Storage:     hyperv1.EtcdBackupStorage{PersistentVolumeClaim: hyperv1.EtcdBackupVolumeClaim{ClaimName: "backups"}},
		},
	}
	for _, obj := range []client.Object{pool, backup} {
		if err := env.Client.Create(t.Context(), obj); err != nil {
			t.Fatal(err)
		}
	}
	return hc
}

// awaitReconciled waits for every cluster's control-plane-operator
// Deployment, and for its NodePool and EtcdBackup to carry their
// finalizers.
func awaitReconciled(t *testing.T, clusters ...*hyperv1.HostedCluster) {
	t.Helper()
	testutil.Eventually(t, 60*time.Second, func() error {
		for _, hc := range clusters {
			key := client.ObjectKey{Namespace: hyperv1.ControlPlaneNamespace(hc.Namespace, hc.Name), Name: "control-plane-operator"}
			if err := env.Client.Get(t.Context(), key, &appsv1.Deployment{}); err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
			pool := &hyperv1.NodePool{}
			if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: hc.Namespace, Name: "workers"}, pool); err != nil {
				return err
			}
			backup := &hyperv1.EtcdBackup{}
			if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: hc.Namespace, Name: "nightly"}, backup); err != nil {
				return err
			}
			if len(pool.Finalizers) == 0 || len(backup.Finalizers) == 0 {
				return fmt.Errorf("the NodePool and EtcdBackup of %s/%s have finalizers %v and %v", hc.Namespace, hc.Name, pool.Finalizers, backup.Finalizers)
			}
		}
		return nil
	})
}

// mustAuditEvents reads the audit log.
func mustAuditEvents(t *testing.T) []auditv1.Event {
	t.Helper()
	events, err := env.AuditEvents()
	if err != nil {
		t.Fatal(err)
	}
	return events
}

// assertWritesFromShardHolders checks, in the audit log, that every write
// by the replicas (users, to their pods) in a cluster's namespace or its
// control-plane namespace was made while the last successful write of the
// cluster's shard Lease was the writer's own (its acquisition or renewal,
// or its release, which comes only after its work stopped): nobody else
// held the shard then. It returns the writes counted by user.
func assertWritesFromShardHolders(t *testing.T, hoNamespace string, clusters []*hyperv1.HostedCluster, users map[string]string) map[string]int {
	t.Helper()
	events := mustAuditEvents(t)
	names := make([]string, 0, len(users))
	for user := range users {
		names = append(names, user)
	}
	all := auditlog.Writes(events, auditlog.Query{Users: names, SucceededOnly: true})
	shardOfNamespace := map[string]int{}
	for _, hc := range clusters {
		shardOfNamespace[hc.Namespace] = shardOf(hc)
		shardOfNamespace[hyperv1.ControlPlaneNamespace(hc.Namespace, hc.Name)] = shardOf(hc)
	}
	byUser := map[string]int{}
	// The last successful write of each shard Lease, by user.
	lastLeaseWriter := map[int]string{}
	for _, w := range all {
		if w.Namespace == hoNamespace && w.Lease() {
			for shard := range shardCount {
				if w.Name == shardLease(shard) {
					lastLeaseWriter[shard] = w.User
				}
			}
			continue
		}
		shard, ok := shardOfNamespace[w.Namespace]
		if !ok {
			continue
		}
		byUser[w.User]++
		if holder := lastLeaseWriter[shard]; holder != w.User {
			t.Errorf("%s (%s) wrote %s %s/%s of shard %d while %q held its Lease", w.User, users[w.User], w.Verb, w.Namespace, w.Name, shard, holder)
		}
	}
	if len(byUser) == 0 {
		t.Fatal("no write for any HostedCluster in the audit log: the check proves nothing")
	}
	t.Logf("writes for the HostedClusters by user: %v", byUser)
	return byUser
}
