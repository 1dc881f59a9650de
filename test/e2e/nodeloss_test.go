package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/cmd/cluster"
	"github.com/hypershift-le/hypershift/support/testutil"
	"github.com/hypershift-le/hypershift/test/auditlog"
	"github.com/hypershift-le/hypershift/test/testenv"
)

const (
	// nodeLostTakeoverGoal is how soon after its node is lost a leader's
	// standby must lead at the default 60s CPO lease: the node rule's 30s
	// of silence, up to one 10s kubelet heartbeat before the loss, and the
	// standby's retry.
	nodeLostTakeoverGoal = 45 * time.Second
	// apiFailuresAfterNotReady bounds how long after the lost node is
	// marked NotReady requests to the hosted API may still fail: its
	// kube-apiserver's endpoint is dropped once its pod reads not ready,
	// and a client's connection to it breaks by its health check.
	apiFailuresAfterNotReady = 20 * time.Second
)

// testNodeLoss: a HighlyAvailable cluster at the default 60s CPO lease,
// spread over three nodes, loses the node of its CPO leader, then has the
// node of its next leader cut off from the management API server, then the
// node of the hypershift-operator's leader; then a SingleReplica cluster
// loses the node of its etcd member.
func testNodeLoss(t *testing.T) {
	if len(lc.Nodes) < 3 {
		t.Skipf("losing a node of a HighlyAvailable control plane takes 3 nodes (etcd's quorum, and the endpoint's node kept); this run has %d (E2E_NODES)", len(lc.Nodes))
	}
	// The default CPO timings: the node rule, not the lease, must hand over.
	installOperator(t, lc.Registry.Image("hypershift", "latest"), "--cpo-leader-elect-lease-duration=60s", "--cpo-leader-elect-renew-deadline=45s")
	createCluster(t, "nodeloss", hyperv1.HighlyAvailable)
	ns := controlPlaneNamespace("nodeloss")
	spreadOverNodes(t, ns, haSpread)
	h := hosted(t, "nodeloss")
	h.keepData(t)
	t.Run("the leader's node restarts its kubelet", func(t *testing.T) { testLeaderKubeletRestart(t, ns, h) })
	t.Run("the leader's node is drained", func(t *testing.T) { testLeaderNodeDrained(t, ns, h) })
	t.Run("the leader's node is lost", func(t *testing.T) { testLeaderNodeLost(t, ns, h) })
	t.Run("the leader's node is cut off from the API server", func(t *testing.T) { testLeaderNodePartitioned(t, ns, h) })
	t.Run("the hypershift-operator's leader's node is cut off from the API server", func(t *testing.T) { testOperatorLeaderNodePartitioned(t, ns) })
	execute(t, cluster.NewDestroyCommand(), "cluster", "--name=nodeloss", "--namespace=clusters", "--wait", "--timeout=4m")
	t.Run("a single-replica control plane's node is lost", testSingleReplicaNodeLost)
}

// haSpread are the replicas of a HighlyAvailable control plane spread
// over the nodes.
var haSpread = map[string]int{"etcd": 3, "kube-apiserver": 3, "kube-controller-manager": 2, "kube-scheduler": 2}

// leaderOffEndpoint returns the CPO leader and standby once the leader
// runs on another node than the endpoint's (a NodePort at one node's
// address: losing that node takes the endpoint, a story of its own), and
// the hypershift-operator's leader on another node than the CPO leader's
// (its loss would be the hypershift-operator's own failover).
func leaderOffEndpoint(t *testing.T, ns string) (leader, standby, node string) {
	t.Helper()
	endpoint := endpointNode(t, clusterOf(t, ns))
	leader, standby = awaitLeaderAndStandby(t, ns)
	if nodeOf(t, ns, leader) == endpoint {
		makeLeader(t, ns, standby)
		leader, standby = awaitLeaderAndStandby(t, ns)
	}
	node = nodeOf(t, ns, leader)
	if node == endpoint {
		t.Fatalf("the leader %s runs on %s, the endpoint's node", leader, node)
	}
	moveOperatorLeaderOff(t, node)
	return leader, standby, node
}

// testLeaderKubeletRestart: the kubelet of the CPO leader's node is killed
// and started again while the containers run on: no handover, the same
// leader process, no container restart, no Lease write by the
// hypershift-operator, and the hosted API answers throughout.
func testLeaderKubeletRestart(t *testing.T, ns string, h *hostedCluster) {
	leader, _ := awaitLeaderAndStandby(t, ns)
	node := nodeOf(t, ns, leader)
	pid := cpoPID(t, ns, leader)
	restarts := cpoRestarts(t, ns, leader)
	p := h.probe(t)
	from := time.Now()
	if err := lc.RestartKubelet(t.Context(), node); err != nil {
		t.Fatal(err)
	}
	back := time.Since(from)
	// The leader renews after the restart (at the default timings, every
	// 30 s), and the kubelet has synced its pods by then.
	awaitRenewedSince(t, ns, time.Now(), time.Minute)
	if h := holder(t, ns); h != leader {
		t.Errorf("the Lease went from %s to %q over a kubelet restart", leader, h)
	}
	if again, ok := lc.PodPID(t.Context(), ns, leader, hyperv1.ControlPlaneOperatorName); !ok || again != pid {
		t.Errorf("the leader's process changed over a kubelet restart: %d, then %d (%v)", pid, again, ok)
	}
	if now := cpoRestarts(t, ns, leader); now != restarts {
		t.Errorf("the leader's container restarted over a kubelet restart: %d restarts, then %d", restarts, now)
	}
	assertParentWroteNothing(t, ns, from)
	t.Logf("kubelet of node %s (the leader %s's) killed and started again: the node read Ready by the new kubelet after %s; the same leader process, no restart, no handover",
		node, leader, back.Round(100*time.Millisecond))
	p.finish(t, "while the leader's node restarted its kubelet")
}

// testLeaderNodeDrained: `kubectl drain` of the CPO leader's node, which
// evicts through the PodDisruptionBudgets of the control plane (one pod of
// each Deployment at a time, etcd keeping its quorum): the leader,
// evicted, releases its Lease on SIGTERM and the standby leads within a
// second, without the hypershift-operator; no CPO write lands outside its
// pod's holding; the hosted API answers throughout. Uncordoned, the node's
// etcd member (its claim is on the node) comes back.
func testLeaderNodeDrained(t *testing.T, ns string, h *hostedCluster) {
	leader, standby, node := leaderOffEndpoint(t, ns)
	p := h.probe(t)
	uncordoned := false
	t.Cleanup(func() {
		if !uncordoned {
			// t.Context() is done by the time cleanups run.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			managementKubectlContext(ctx, t, "uncordon", node)
		}
	})
	from := time.Now()
	out := managementKubectl(t, "drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=4m")
	drained := time.Since(from)
	awaitHolder(t, ns, standby, 10*time.Second)
	// The evicted leader's last write before the standby's first is its
	// release (the ones before are renewals).
	var released, takeover time.Time
	scanAudit(t, func(events []auditv1.Event) bool {
		released, takeover = time.Time{}, time.Time{}
		for _, e := range leaseWritesIn(events, ns, from, time.Now()) {
			switch {
			case !auditlog.Succeeded(e) || !takeover.IsZero():
			case podOf(e) == leader:
				released = e.RequestReceivedTimestamp.Time
			case podOf(e) == standby && !released.IsZero():
				takeover = e.RequestReceivedTimestamp.Time
			}
		}
		return !released.IsZero() && !takeover.IsZero()
	})
	if released.IsZero() || takeover.IsZero() {
		t.Fatalf("the audit log shows no release by the evicted leader %s (%v) or no takeover by %s after it (%v)", leader, released, standby, takeover)
	}
	t.Logf("node %s drained in %s (%d lines of kubectl drain; eviction to removal: %s); the evicted leader %s released its Lease, and %s led %s later",
		node, drained.Round(100*time.Millisecond), strings.Count(out, "\n"), evictionTimes(auditEvents(t), ns, from), leader, standby, takeover.Sub(released).Round(time.Millisecond))
	if took := takeover.Sub(released); took > time.Second {
		t.Errorf("the standby led %s after the evicted leader released the Lease, want <= 1s", took)
	}
	assertParentWroteNothing(t, ns, from)
	if v := auditlog.OutsideHoldings(cpoWrites(t, ns), auditlog.ByPod); len(v) != 0 {
		t.Errorf("%d CPO writes outside their pod's holding: %v", len(v), v)
	}
	managementKubectl(t, "uncordon", node)
	uncordoned = true
	// Nothing moves pods back to an uncordoned node but etcd's member,
	// whose claim is there: the replicas run, not spread, until one pod of
	// each crowded node is evicted, as a descheduler would.
	awaitRecoveredUnspread(t, ns, node)
	respread(t, ns)
	spreadOverNodes(t, ns, haSpread)
	p.finish(t, "while the leader's node was drained, uncordoned and the replicas spread again")
}

// respread evicts, for each Deployment of the control plane, one pod of a
// node that runs two of them while a node runs none: the scheduler, with
// the spread the CPO renders, puts the replacement there.
func respread(t *testing.T, ns string) {
	t.Helper()
	nodes := map[string]bool{}
	for _, n := range lc.Nodes {
		nodes[n.Name] = true
	}
	for _, app := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
		pods := &corev1.PodList{}
		if err := lc.Env.Client.List(t.Context(), pods, client.InNamespace(ns), client.MatchingLabels{"app": app}); err != nil {
			t.Fatal(err)
		}
		onNode := map[string][]corev1.Pod{}
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil {
				onNode[p.Spec.NodeName] = append(onNode[p.Spec.NodeName], p)
			}
		}
		empty := false
		for n := range nodes {
			empty = empty || len(onNode[n]) == 0
		}
		for _, crowded := range onNode {
			if len(crowded) < 2 || !empty {
				continue
			}
			eviction := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: crowded[0].Name}}
			testutil.Eventually(t, time.Minute, func() error {
				return lc.Env.Client.SubResource("eviction").Create(t.Context(), &crowded[0], eviction)
			})
			t.Logf("evicted %s/%s, one of %d %s pods on node %s", ns, crowded[0].Name, len(crowded), app, crowded[0].Spec.NodeName)
			break
		}
	}
}

// managementKubectl runs kubectl against the management cluster.
func managementKubectl(t *testing.T, args ...string) string {
	t.Helper()
	return managementKubectlContext(t.Context(), t, args...)
}

// managementKubectlContext is managementKubectl under ctx.
func managementKubectlContext(ctx context.Context, t *testing.T, args ...string) string {
	t.Helper()
	root, err := testenv.RepositoryRoot()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(ctx, filepath.Join(root, "bin", "kubectl"), append([]string{"--kubeconfig=" + lc.Kubeconfig}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// testLeaderNodeLost: the node of the CPO leader is lost (its kubelet,
// containerd and every container killed together; the Node and Pod
// objects still say Ready and Running). The hypershift-operator, seeing
// the fence in force, releases the leader's Lease once the node has been
// silent for its bound, and the standby on another node leads well before
// the lease would have run out; no CPO write lands outside its pod's
// holding; the hosted API answers throughout (failures are allowed only
// while the lost kube-apiserver is still an endpoint); when the node comes
// back, its members rejoin with the data kept. The timeline is logged.
func testLeaderNodeLost(t *testing.T, ns string, h *hostedCluster) {
	leader, standby, lost := leaderOffEndpoint(t, ns)
	p := h.probe(t)
	lostAt := time.Now()
	comeBack := loseNode(t, lost)
	t.Logf("node %s lost, with the CPO leader %s; the standby %s runs on %s", lost, leader, standby, nodeOf(t, ns, standby))

	awaitHolder(t, ns, standby, 60*time.Second)
	released, takeover := parentRelease(t, ns, lostAt)
	assertNodeLostEvent(t, "nodeloss", leader, lost, lostAt)
	notReady := nodeNotReadySince(t, lost, 2*time.Minute)

	comeBack()
	nodeBack := time.Now()
	awaitRecovered(t, ns, lost)
	recovered := time.Now()
	h.awaitData(t, time.Minute)

	t.Logf("node lost: timeline from the loss: Lease released by the hypershift-operator +%s, standby %s leads +%s (the lease would have run out by +60s), NotReady +%s, node Ready again after it came back +%s, every member back, spread, and Available +%s",
		released.Sub(lostAt).Round(100*time.Millisecond), standby, takeover.Sub(lostAt).Round(100*time.Millisecond),
		notReady.Sub(lostAt).Round(time.Second), nodeBack.Sub(lostAt).Round(time.Second), recovered.Sub(lostAt).Round(time.Second))
	if took := takeover.Sub(lostAt); took > nodeLostTakeoverGoal {
		t.Errorf("the standby led %s after the node was lost, want <= %s", took.Round(100*time.Millisecond), nodeLostTakeoverGoal)
	}
	if v := auditlog.OutsideHoldings(cpoWrites(t, ns), auditlog.ByPod); len(v) != 0 {
		t.Errorf("%d CPO writes outside their pod's holding: %v", len(v), v)
	}
	finishAllowingFailures(t, p, "while a node of three was lost and came back", notReady.Add(apiFailuresAfterNotReady))
}

// testLeaderNodePartitioned: the node of the CPO leader, its kubelet and
// its pods, is cut off from the management API server while everything on
// it runs on. Its kubelet's silence lets the hypershift-operator release
// the Lease under the fence, and the standby leads, before the partitioned
// leader's own renew deadline has run out: for a while it still believes
// it leads. The partition then heals: nothing the old leader sends lands
// (every write of its pod after the takeover is refused), it finds it lost
// the Lease and exits, and its pod runs it again as a standby. The hosted
// API answers throughout.
func testLeaderNodePartitioned(t *testing.T, ns string, h *hostedCluster) {
	leader, standby, node := leaderOffEndpoint(t, ns)
	restarts := cpoRestarts(t, ns, leader)
	p := h.probe(t)
	heal := partitionNode(t, node)
	cutAt := time.Now()
	t.Logf("node %s cut off from the API server, with the CPO leader %s; the standby %s runs on %s", node, leader, standby, nodeOf(t, ns, standby))
	awaitHolder(t, ns, standby, 60*time.Second)
	released, takeover := parentRelease(t, ns, cutAt)
	heal()
	healAt := time.Now()
	awaitRestarted(t, ns, leader, restarts)
	exited := time.Now()
	awaitLeaderAndStandby(t, ns)

	var landed, refused []string
	user := "system:serviceaccount:" + ns + ":" + hyperv1.ControlPlaneOperatorName
	for _, w := range auditlog.Writes(auditEvents(t), auditlog.Query{Users: []string{user}}) {
		if w.Pod != leader || w.At.Before(takeover) {
			continue
		}
		if w.Code >= 200 && w.Code < 300 {
			landed = append(landed, w.String())
		} else {
			refused = append(refused, w.String())
		}
	}
	t.Logf("node partitioned: timeline from the cut: Lease released by the hypershift-operator +%s, standby %s leads +%s, partition healed +%s, the old leader exited and runs again as a standby +%s; its writes after the takeover: %d refused %v, %d landed",
		released.Sub(cutAt).Round(100*time.Millisecond), standby, takeover.Sub(cutAt).Round(100*time.Millisecond),
		healAt.Sub(cutAt).Round(time.Second), exited.Sub(cutAt).Round(time.Second), len(refused), refused, len(landed))
	if len(landed) > 0 {
		t.Errorf("writes of the old leader %s landed after the takeover: %v", leader, landed)
	}
	if took := takeover.Sub(cutAt); took > nodeLostTakeoverGoal {
		t.Errorf("the standby led %s after the node was cut off, want <= %s", took.Round(100*time.Millisecond), nodeLostTakeoverGoal)
	}
	if v := auditlog.OutsideHoldings(cpoWrites(t, ns), auditlog.ByPod); len(v) != 0 {
		t.Errorf("%d CPO writes outside their pod's holding: %v", len(v), v)
	}
	awaitRecovered(t, ns, node)
	p.finish(t, "while the leader's node was cut off from the management API server")
}

// awaitHolder waits until pod holds the CPO Lease of ns.
func awaitHolder(t *testing.T, ns, pod string, timeout time.Duration) {
	t.Helper()
	testutil.Eventually(t, timeout, func() error {
		if h := holder(t, ns); h != pod {
			return fmt.Errorf("holder %q, want %s", h, pod)
		}
		return nil
	})
}

// awaitRecovered waits until node is schedulable again (the node
// lifecycle controller lifted its taints), the control plane's replicas
// run spread over all nodes, every etcd member is ready and the
// HostedCluster is Available.
func awaitRecovered(t *testing.T, ns, node string) {
	t.Helper()
	untainted(t, node)
	spreadOverNodes(t, ns, haSpread)
	membersAndAvailable(t, ns)
}

// awaitRecoveredUnspread is awaitRecovered with every replica running,
// wherever it runs.
func awaitRecoveredUnspread(t *testing.T, ns, node string) {
	t.Helper()
	untainted(t, node)
	for app, want := range haSpread {
		testutil.Eventually(t, 2*time.Minute, func() error {
			pods := &corev1.PodList{}
			if err := lc.Env.Client.List(t.Context(), pods, client.InNamespace(ns), client.MatchingLabels{"app": app}); err != nil {
				return err
			}
			ready := 0
			for _, p := range pods.Items {
				if p.DeletionTimestamp == nil && podReady(&p) {
					ready++
				}
			}
			if ready != want {
				return fmt.Errorf("%d %s pods ready, want %d", ready, app, want)
			}
			return nil
		})
	}
	membersAndAvailable(t, ns)
}

// untainted waits until node has no taint left.
func untainted(t *testing.T, node string) {
	t.Helper()
	testutil.Eventually(t, time.Minute, func() error {
		n := &corev1.Node{}
		if err := lc.Env.Client.Get(t.Context(), client.ObjectKey{Name: node}, n); err != nil {
			return err
		}
		if len(n.Spec.Taints) > 0 || n.Spec.Unschedulable {
			return fmt.Errorf("node %s is tainted or cordoned: %v", node, n.Spec.Taints)
		}
		return nil
	})
}

// membersAndAvailable waits until every etcd member is ready and the
// HostedCluster is Available.
func membersAndAvailable(t *testing.T, ns string) {
	t.Helper()
	for _, member := range []string{"etcd-0", "etcd-1", "etcd-2"} {
		testutil.Eventually(t, 2*time.Minute, func() error {
			pod := &corev1.Pod{}
			if err := lc.Env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: member}, pod); err != nil || !podReady(pod) {
				return fmt.Errorf("etcd member %s is not ready (%w)", member, err)
			}
			return nil
		})
	}
	testutil.Eventually(t, 2*time.Minute, func() error {
		if c := available(t, clusterOf(t, ns)); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("Available: %+v", c)
		}
		return nil
	})
}

// endpointNode is the node whose address the HostedCluster's endpoint
// publishes.
func endpointNode(t *testing.T, name string) string {
	t.Helper()
	hc := &hyperv1.HostedCluster{}
	if err := lc.Env.Client.Get(t.Context(), client.ObjectKey{Namespace: "clusters", Name: name}, hc); err != nil {
		t.Fatal(err)
	}
	for _, n := range lc.Nodes {
		if n.Address == hc.Status.ControlPlaneEndpoint.Host {
			return n.Name
		}
	}
	t.Fatalf("the endpoint %s is no node's address", hc.Status.ControlPlaneEndpoint.Host)
	return ""
}

// clusterOf is the name of the HostedCluster of namespace clusters whose
// control-plane namespace is ns.
func clusterOf(t *testing.T, ns string) string {
	t.Helper()
	name, ok := strings.CutPrefix(ns, "clusters-")
	if !ok || controlPlaneNamespace(name) != ns {
		t.Fatalf("%s is no control-plane namespace of a HostedCluster in namespace clusters", ns)
	}
	return name
}

// nodeOf is the node of pod ns/name.
func nodeOf(t *testing.T, ns, name string) string {
	t.Helper()
	pod := &corev1.Pod{}
	if err := lc.Env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, pod); err != nil {
		t.Fatal(err)
	}
	return pod.Spec.NodeName
}

// moveOperatorLeaderOff makes the hypershift-operator's leader a pod of
// another node than node: its pod there is deleted (it releases its Lease
// on SIGTERM) until the other replica leads.
func moveOperatorLeaderOff(t *testing.T, node string) {
	t.Helper()
	const ns = "hypershift"
	for attempt := 0; ; attempt++ {
		lease := &coordinationv1.Lease{}
		if err := lc.Env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: hyperv1.HypershiftOperatorLeaseName}, lease); err != nil {
			t.Fatal(err)
		}
		leader := ""
		if lease.Spec.HolderIdentity != nil {
			leader = *lease.Spec.HolderIdentity
		}
		if leader != "" && nodeOf(t, ns, leader) != node {
			return
		}
		if attempt == 3 {
			t.Fatalf("the hypershift-operator's leader %q stays on node %s after 3 handovers", leader, node)
		}
		if err := lc.Env.Client.Delete(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: leader}}); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 2*time.Minute, func() error {
			if err := lc.Env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: hyperv1.HypershiftOperatorLeaseName}, lease); err != nil {
				return err
			}
			if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" || *lease.Spec.HolderIdentity == leader {
				return fmt.Errorf("the hypershift-operator's Lease is held by %v", lease.Spec.HolderIdentity)
			}
			return nil
		})
	}
}

// assertNodeLostEvent waits for the HostedCluster's event of the release
// of pod's Lease for the silence of node.
func assertNodeLostEvent(t *testing.T, cluster, pod, node string, since time.Time) {
	t.Helper()
	want := fmt.Sprintf("Lease released for %s: its node %s stopped heartbeating ", pod, node)
	awaitLeaseReleasedEvent(t, cluster, want+"...", func(note string) bool { return strings.HasPrefix(note, want) }, since)
}

// nodeNotReadySince waits until the node's Ready condition is not True
// and returns when it changed.
func nodeNotReadySince(t *testing.T, name string, timeout time.Duration) time.Time {
	t.Helper()
	var since time.Time
	testutil.Eventually(t, timeout, func() error {
		node := &corev1.Node{}
		if err := lc.Env.Client.Get(t.Context(), client.ObjectKey{Name: name}, node); err != nil {
			return err
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
				since = c.LastTransitionTime.Time
				return nil
			}
		}
		return fmt.Errorf("node %s still reads Ready", name)
	})
	return since
}

// finishAllowingFailures stops p and fails the test for any failed request
// after until, or too few answered ones; it logs the failures before.
func finishAllowingFailures(t *testing.T, p *prober, what string, until time.Time) {
	t.Helper()
	p.stop()
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	var late []string
	var first, last time.Time
	for i, at := range p.failedAt {
		if at.After(until) {
			late = append(late, p.failures[i])
		}
		if first.IsZero() {
			first = at
		}
		last = at
	}
	if p.ok < 10 {
		t.Errorf("%s: only %d requests to the hosted API succeeded: the check proves nothing", what, p.ok)
	}
	if len(late) > 0 {
		t.Errorf("%s: %d requests to the hosted API failed after %s: %v", what, len(late), until.Format("15:04:05"), late)
	}
	if len(p.failedAt) == 0 {
		t.Logf("%s: the hosted API answered all %d requests", what, p.ok)
		return
	}
	t.Logf("%s: the hosted API answered %d of %d requests; %d failed between %s and %s (allowed until %s): %v",
		what, p.ok, p.ok+len(p.failures), len(p.failures), first.Format("15:04:05.000"), last.Format("15:04:05.000"), until.Format("15:04:05"), p.failures)
}
