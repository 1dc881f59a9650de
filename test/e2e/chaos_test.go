package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/cmd/cluster"
	"github.com/hypershift-le/hypershift/support/testutil"
	"github.com/hypershift-le/hypershift/test/auditlog"
)

// chaosClusters is how many HighlyAvailable HostedClusters the chaos mode
// runs the faults under.
const chaosClusters = 2

// chaosCluster is one HostedCluster of the chaos mode.
type chaosCluster struct {
	name, ns string
	h        *hostedCluster
}

// chaosFault is one fault of the chaos mode, made on a round's node: the
// node of the first cluster's CPO leader.
type chaosFault struct {
	name string
	// handover says whether a CPO leader on the node must hand over.
	handover bool
	// firstOnly: the fault hits the first cluster's leader only, not its
	// node.
	firstOnly bool
	// target picks the round's node; nil: the node of the first
	// cluster's CPO leader, the hypershift-operator's leader moved off it.
	target func(t *testing.T, clusters []*chaosCluster) string
	// make makes the fault, waits for its effect and undoes it.
	make func(t *testing.T, r *chaosRound, clusters []*chaosCluster)
	// recover waits until c serves as before the fault, spread again.
	recover func(t *testing.T, c *chaosCluster, node string)
}

// chaosFaults are made in turn, round after round.
var chaosFaults = []chaosFault{
	{name: "kubelet restart", make: func(t *testing.T, r *chaosRound, clusters []*chaosCluster) {
		if err := lc.RestartKubelet(t.Context(), r.node); err != nil {
			t.Fatal(err)
		}
		back := time.Now()
		// The first cluster's leader renews after the kubelet is back
		// (every 30s at the default timings): no handover by then.
		awaitRenewedSince(t, clusters[0].ns, back, time.Minute)
	}, recover: func(*testing.T, *chaosCluster, string) {}},
	{name: "drain", handover: true, make: func(t *testing.T, r *chaosRound, clusters []*chaosCluster) {
		uncordoned := false
		t.Cleanup(func() {
			if !uncordoned {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				managementKubectlContext(ctx, t, "uncordon", r.node)
			}
		})
		managementKubectl(t, "drain", r.node, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=4m")
		r.awaitHandovers(t, clusters, 10*time.Second)
		managementKubectl(t, "uncordon", r.node)
		uncordoned = true
	}, recover: func(t *testing.T, c *chaosCluster, node string) {
		awaitRecoveredUnspread(t, c.ns, node)
		respread(t, c.ns)
		spreadOverNodes(t, c.ns, haSpread)
	}},
	{name: "node lost", handover: true, make: func(t *testing.T, r *chaosRound, clusters []*chaosCluster) {
		comeBack := loseNode(t, r.node)
		r.awaitHandovers(t, clusters, 60*time.Second)
		r.notReady = nodeNotReadySince(t, r.node, 2*time.Minute)
		comeBack()
	}, recover: func(t *testing.T, c *chaosCluster, node string) { awaitRecovered(t, c.ns, node) }},
	{name: "node cut off from the API server", handover: true, make: func(t *testing.T, r *chaosRound, clusters []*chaosCluster) {
		heal := partitionNode(t, r.node)
		r.awaitHandovers(t, clusters, 60*time.Second)
		heal()
	}, recover: func(t *testing.T, c *chaosCluster, node string) { awaitRecovered(t, c.ns, node) }},
	{name: "leader crash loop", handover: true, firstOnly: true, make: func(t *testing.T, r *chaosRound, clusters []*chaosCluster) {
		crashLoop(t, clusters[0].ns, r.clusters[0].leader, false)
		r.awaitHandovers(t, clusters, 60*time.Second)
	}, recover: func(*testing.T, *chaosCluster, string) {}},
	{name: "hypershift-operator leader's node lost", handover: true, target: operatorLeaderNode, make: func(t *testing.T, r *chaosRound, clusters []*chaosCluster) {
		comeBack := loseNode(t, r.node)
		// No parent above the hypershift-operator: its other replica
		// takes the Lease when it has run its duration.
		testutil.Eventually(t, 2*hoTakeoverBound, func() error {
			if h := lc.Env.Holder(t, operatorNamespace, hyperv1.HypershiftOperatorLeaseName); h == "" || h == r.operatorLeader {
				return fmt.Errorf("the hypershift-operator's Lease is held by %q", h)
			}
			return nil
		})
		r.awaitHandovers(t, clusters, 2*hoTakeoverBound)
		r.notReady = nodeNotReadySince(t, r.node, 2*time.Minute)
		comeBack()
	}, recover: func(t *testing.T, c *chaosCluster, node string) { awaitRecovered(t, c.ns, node) }},
}

// operatorLeaderNode is the node of the hypershift-operator's leader, once
// that is not the endpoints' node.
func operatorLeaderNode(t *testing.T, clusters []*chaosCluster) string {
	t.Helper()
	moveOperatorLeaderOff(t, endpointNode(t, clusters[0].name))
	leader, _ := operatorLeaderAndStandby(t)
	return nodeOf(t, operatorNamespace, leader)
}

// chaosRound is what one fault did.
type chaosRound struct {
	fault, node string
	start       time.Time
	// notReady is when the node read NotReady (zero: not waited for).
	notReady  time.Time
	undone    time.Time
	recovered time.Time
	clusters  []chaosOutcome
	// operatorOutside counts the hypershift-operator's writes outside its
	// pod's holding of its Lease during the round.
	operatorOutside int
	// operatorLeader held the hypershift-operator's Lease at the start;
	// operatorTakeover is another pod's first write of it (zero: none).
	operatorLeader   string
	operatorTakeover time.Time
}

// chaosOutcome is what one fault did to one HostedCluster.
type chaosOutcome struct {
	cluster, leader string
	// hit: its leader was on the round's node (or, for a fault on the
	// first cluster's leader only, it is that cluster).
	hit bool
	// released is the hypershift-operator's release of its Lease, takeover
	// the first write of another pod (zero: none).
	released, takeover time.Time
	newLeader          string
	ok, failed         int
	// failures are the failed hosted requests, with when and why.
	failures []string
	// outside counts CPO writes outside their pod's holding in the round.
	outside int
}

// TestChaos is the chaos mode (`make chaos`): with E2E_CHAOS set to a
// duration (E2E_CHAOS_ROUNDS bounds the rounds, 12 by default), it makes
// the node-loss stories' faults in turn, on the node of a CPO leader of
// one of two HighlyAvailable HostedClusters at the default timings, until
// either bound is reached, and writes, per fault, the timeline and the
// writes outside any holding to the "chaos" section of docs/benchmarks.md.
// Without E2E_CHAOS it does not run: the stories of TestEndToEnd prove
// each fault once; this measures them again and again.
func TestChaos(t *testing.T) {
	budget, err := time.ParseDuration(os.Getenv("E2E_CHAOS"))
	if os.Getenv("E2E_CHAOS") == "" {
		t.Skip("a benchmark, not a test of its own: minutes of repeated faults that rewrite docs/benchmarks.md; " +
			"each fault is asserted once by TestEndToEnd's node loss and parent arbitrates stories, which always run; measure with make chaos (E2E_CHAOS=<duration>)")
	}
	if err != nil || budget <= 0 {
		t.Fatalf("E2E_CHAOS=%q is no positive duration", os.Getenv("E2E_CHAOS"))
	}
	rounds := 12
	if v := os.Getenv("E2E_CHAOS_ROUNDS"); v != "" {
		if rounds, err = strconv.Atoi(v); err != nil || rounds < 1 {
			t.Fatalf("E2E_CHAOS_ROUNDS=%q is no positive count", v)
		}
	}
	if len(lc.Nodes) < 3 {
		t.Fatalf("the chaos mode takes 3 nodes (etcd's quorum, and the endpoint's node kept); this run has %d (E2E_NODES)", len(lc.Nodes))
	}
	began := time.Now()
	installOperator(t, lc.Registry.Image("hypershift", "latest"), "--cpo-leader-elect-lease-duration=60s", "--cpo-leader-elect-renew-deadline=45s")
	var clusters []*chaosCluster
	for i := range chaosClusters {
		c := &chaosCluster{name: fmt.Sprintf("chaos-%d", i+1)}
		c.ns = controlPlaneNamespace(c.name)
		createCluster(t, c.name, hyperv1.HighlyAvailable)
		clusters = append(clusters, c)
	}
	for _, c := range clusters {
		spreadOverNodes(t, c.ns, haSpread)
		c.h = hosted(t, c.name)
		c.h.keepData(t)
		if endpointNode(t, c.name) != endpointNode(t, clusters[0].name) {
			t.Fatalf("the HostedClusters publish their endpoints on different nodes: a fault on either would take one")
		}
	}
	setUp := time.Since(began)
	from := time.Now()
	var done []chaosRound
	for i := 0; i < rounds && time.Since(from) < budget; i++ {
		f := chaosFaults[i%len(chaosFaults)]
		var r chaosRound
		if !t.Run(fmt.Sprintf("round %d: %s", i+1, f.name), func(t *testing.T) { r = runChaosRound(t, f, clusters) }) {
			break
		}
		done = append(done, r)
	}
	ran := time.Since(from)
	for _, c := range clusters {
		execute(t, cluster.NewDestroyCommand(), "cluster", "--name="+c.name, "--namespace=clusters", "--wait", "--timeout=4m")
	}
	writeChaosReport(t, done, budget, rounds, setUp, ran)
}

// runChaosRound makes fault f on the node of the first cluster's CPO
// leader, waits until every cluster has recovered, and returns what it
// measured; a write outside a holding, or a handover that should not or
// should have happened, fails the round.
func runChaosRound(t *testing.T, f chaosFault, clusters []*chaosCluster) chaosRound {
	var node string
	if f.target != nil {
		node = f.target(t, clusters)
	} else {
		_, _, node = leaderOffEndpoint(t, clusters[0].ns)
	}
	r := chaosRound{fault: f.name, node: node}
	r.operatorLeader, _ = operatorLeaderAndStandby(t)
	probes := make([]*prober, len(clusters))
	for i, c := range clusters {
		leader, _ := awaitLeaderAndStandby(t, c.ns)
		hit := nodeOf(t, c.ns, leader) == node
		if f.firstOnly {
			hit = i == 0
		}
		r.clusters = append(r.clusters, chaosOutcome{cluster: c.name, leader: leader, hit: hit})
		probes[i] = c.h.probe(t)
	}
	r.start = time.Now()
	f.make(t, &r, clusters)
	r.undone = time.Now()
	for _, c := range clusters {
		f.recover(t, c, node)
		awaitLeaderAndStandby(t, c.ns)
	}
	r.recovered = time.Now()
	time.Sleep(time.Second) // the audit log's last lines
	events := auditEvents(t)
	for i, c := range clusters {
		o := &r.clusters[i]
		probes[i].stop()
		<-probes[i].done
		probes[i].mu.Lock()
		o.ok, o.failed = probes[i].ok, len(probes[i].failures)
		o.failures = append([]string(nil), probes[i].failures...)
		probes[i].mu.Unlock()
		for _, e := range leaseWritesIn(events, c.ns, r.start, r.recovered) {
			switch {
			case !auditlog.Succeeded(e):
			case e.User.Username == hoUser && o.released.IsZero():
				o.released = e.RequestReceivedTimestamp.Time
			case podOf(e) != "" && podOf(e) != o.leader && o.takeover.IsZero():
				o.takeover, o.newLeader = e.RequestReceivedTimestamp.Time, podOf(e)
			}
		}
		for _, w := range auditlog.OutsideHoldings(cpoWrites(t, c.ns), auditlog.ByPod) {
			if !w.At.Before(r.start) {
				o.outside++
				t.Errorf("%s: a CPO write outside its pod's holding: %v", c.name, w)
			}
		}
		switch handedOver := !o.takeover.IsZero(); {
		case o.hit && handedOver != f.handover:
			t.Errorf("%s: its leader %s was on node %s; handed over: %v, want %v", c.name, o.leader, node, handedOver, f.handover)
		case !o.hit && handedOver:
			t.Errorf("%s: its leader %s was not on node %s, yet %s took over", c.name, o.leader, node, o.newLeader)
		}
		t.Logf("%s: leader %s (on the node: %v), released by the hypershift-operator %s, %s led %s; hosted API %d of %d answered; %d CPO writes outside a holding",
			c.name, o.leader, o.hit, sinceOrNone(o.released, r.start), o.newLeader, sinceOrNone(o.takeover, r.start), o.ok, o.ok+o.failed, o.outside)
		if len(o.failures) > 0 {
			t.Logf("%s: the failed hosted requests: %v", c.name, o.failures)
		}
	}
	for _, w := range auditlog.Writes(events, auditlog.Query{Users: []string{hoUser}, Namespace: operatorNamespace, SucceededOnly: true}) {
		if w.Lease() && w.Name == hyperv1.HypershiftOperatorLeaseName && w.Pod != r.operatorLeader && !w.At.Before(r.start) {
			r.operatorTakeover = w.At
			t.Logf("the hypershift-operator's Lease went from %s to %s %s after the fault began", r.operatorLeader, w.Pod, w.At.Sub(r.start).Round(100*time.Millisecond))
			break
		}
	}
	for _, w := range operatorWritesOutside(events) {
		if !w.At.Before(r.start) {
			r.operatorOutside++
			t.Errorf("a hypershift-operator write outside its pod's holding: %v", w)
		}
	}
	t.Logf("%s on node %s: undone %s after it began, every cluster recovered %s after", f.name, node,
		r.undone.Sub(r.start).Round(100*time.Millisecond), r.recovered.Sub(r.start).Round(time.Second))
	return r
}

// awaitHandovers waits until every cluster hit by the round's fault has a
// leader other than the one it had.
func (r *chaosRound) awaitHandovers(t *testing.T, clusters []*chaosCluster, timeout time.Duration) {
	t.Helper()
	for i, c := range clusters {
		if o := r.clusters[i]; o.hit {
			testutil.Eventually(t, timeout, func() error {
				if h := holder(t, c.ns); h == "" || h == o.leader {
					return fmt.Errorf("%s: holder %q", c.name, h)
				}
				return nil
			})
		}
	}
}

// awaitRenewedSince waits until the CPO Lease of ns was renewed after
// since.
func awaitRenewedSince(t *testing.T, ns string, since time.Time, timeout time.Duration) {
	t.Helper()
	testutil.Eventually(t, timeout, func() error {
		lease := &coordinationv1.Lease{}
		if err := lc.Env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: hyperv1.ControlPlaneOperatorLeaseName}, lease); err != nil {
			return err
		}
		if lease.Spec.RenewTime == nil || lease.Spec.RenewTime.Time.Before(since) {
			return fmt.Errorf("the Lease was last renewed at %v", lease.Spec.RenewTime)
		}
		return nil
	})
}

// operatorWritesOutside returns the hypershift-operator's successful
// writes made while another of its pods held its Lease (by its own Lease
// writes; its releases of CPO Leases are writes like any other).
func operatorWritesOutside(events []auditv1.Event) []auditlog.Write {
	var writes []auditlog.Write
	for _, w := range auditlog.Writes(events, auditlog.Query{Users: []string{hoUser}, SucceededOnly: true}) {
		if w.Lease() && (w.Namespace != operatorNamespace || w.Name != hyperv1.HypershiftOperatorLeaseName) {
			// A release of a CPO Lease is no holding of the HO's: count
			// it as any other write.
			w.Resource = "leases (a control-plane-operator's)"
		}
		writes = append(writes, w)
	}
	return auditlog.OutsideHoldings(writes, auditlog.ByPod)
}
