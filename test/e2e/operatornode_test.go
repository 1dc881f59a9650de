package e2e

import (
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/config"
	"github.com/hypershift-le/hypershift/support/testutil"
	"github.com/hypershift-le/hypershift/test/auditlog"
)

// operatorNamespace is where the e2e installs the hypershift-operator.
const operatorNamespace = "hypershift"

// testOperatorLeaderNodePartitioned: the node of the hypershift-operator's
// leader is cut off from the management API server while everything on it
// runs on. The other replica leads by the lease rules (the HO has no
// parent: the cut-off leader's Lease runs its 60s), and acts: a change to
// the HostedCluster made during the cut is rendered into the CPO's
// Deployment by the new leader. When the cut heals, the old leader, which
// stopped at its renew deadline, writes nothing: no HostedCluster is
// reconciled by both (the audit log: no write of the old leader's pod lands
// after the new one's first, and the new one wrote nothing before it led).
func testOperatorLeaderNodePartitioned(t *testing.T, ns string) {
	leaderOffEndpoint(t, ns) // the CPO leader is on another node
	leader, standby := operatorLeaderAndStandby(t)
	node := nodeOf(t, operatorNamespace, leader)
	restarts := containerRestarts(t, operatorNamespace, leader, "hypershift-operator")
	from := time.Now()
	heal := partitionNode(t, node)
	t.Logf("node %s, with the hypershift-operator's leader %s, cut off; the other replica %s runs on %s", node, leader, standby, nodeOf(t, operatorNamespace, standby))

	testutil.Eventually(t, 2*time.Minute, func() error {
		if h := lc.Env.Holder(t, operatorNamespace, hyperv1.HypershiftOperatorLeaseName); h != standby {
			return fmt.Errorf("the hypershift-operator's Lease is held by %q, want %s", h, standby)
		}
		return nil
	})
	// Work for the new leader: a log level for the CPO, rendered into its
	// Deployment's args.
	setClusterAnnotation(t, "nodeloss", hyperv1.ControlPlaneOperatorLogLevelAnnotation, "debug")
	testutil.Eventually(t, time.Minute, func() error {
		d := &appsv1.Deployment{}
		if err := lc.Env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: hyperv1.ControlPlaneOperatorName}, d); err != nil {
			return err
		}
		if !slices.Contains(d.Spec.Template.Spec.Containers[0].Args, "--zap-log-level=debug") {
			return fmt.Errorf("the CPO Deployment's args %v have no --zap-log-level=debug", d.Spec.Template.Spec.Containers[0].Args)
		}
		return nil
	})
	acted := time.Now()

	heal()
	healedAt := time.Now()
	// The old leader stopped at its renew deadline and exits; its pod runs
	// it again, a standby.
	testutil.Eventually(t, 2*time.Minute, func() error {
		if n := containerRestarts(t, operatorNamespace, leader, "hypershift-operator"); n <= restarts {
			return fmt.Errorf("the old leader's container restarted %d times, want more than %d", n, restarts)
		}
		return nil
	})
	time.Sleep(10 * time.Second) // anything it still had to send lands by now

	writes := auditlog.Writes(auditEvents(t), auditlog.Query{Users: []string{hoUser}, SucceededOnly: true})
	var first time.Time // the new leader's first write
	for _, w := range writes {
		if w.Pod == standby && w.At.After(from) && (first.IsZero() || w.At.Before(first)) {
			first = w.At
		}
	}
	if first.IsZero() {
		t.Fatalf("the audit log shows no write by the new leader %s", standby)
	}
	// The cut-off leader's last renewal, before the cut: its Lease must
	// have run its whole duration from there (the HO has no parent).
	var renewed time.Time
	for _, w := range writes {
		if w.Pod == leader && w.Lease() && w.Namespace == operatorNamespace && w.At.Before(from) {
			renewed = w.At
		}
	}
	if renewed.IsZero() {
		t.Fatalf("the audit log shows no renewal by the leader %s before the cut", leader)
	}
	var late []string
	last := time.Time{} // the old leader's last write
	for _, w := range writes {
		if w.Pod != leader || w.At.Before(from) {
			continue
		}
		if w.At.After(last) {
			last = w.At
		}
		if !w.At.Before(first) {
			late = append(late, w.String())
		}
	}
	t.Logf("hypershift-operator's leader cut off: timeline from the cut: the old leader's last renewal %s, the other replica takes the Lease +%s (%s after that renewal), renders a change +%s, cut healed +%s; the old leader's writes after the cut: last %s, after the new leader's first: %d",
		renewed.Sub(from).Round(100*time.Millisecond), first.Sub(from).Round(100*time.Millisecond), first.Sub(renewed).Round(100*time.Millisecond),
		acted.Sub(from).Round(100*time.Millisecond), healedAt.Sub(from).Round(time.Second), sinceOrNone(last, from), len(late))
	if ran := first.Sub(renewed); ran < config.DefaultHypershiftOperatorTimings.LeaseDuration-time.Second {
		t.Errorf("the other replica took the Lease %s after the cut-off leader's last renewal, before the lease duration %s", ran, config.DefaultHypershiftOperatorTimings.LeaseDuration)
	}
	if len(late) > 0 {
		t.Errorf("writes of the old leader %s landed after the new leader's first: %v", leader, late)
	}
	if took := first.Sub(from); took > hoTakeoverBound {
		t.Errorf("the other replica led %s after the cut, want <= %s (the lease and a retry)", took.Round(100*time.Millisecond), hoTakeoverBound)
	}
}

// hoTakeoverBound is the hypershift-operator's takeover bound after a cut:
// its 60s lease from the cut-off leader's last renewal (which came up to
// its 30s renew interval before the cut), and a retry period.
const hoTakeoverBound = 60*time.Second + 5*time.Second

// operatorLeaderAndStandby returns the hypershift-operator's leader and its
// other replica.
func operatorLeaderAndStandby(t *testing.T) (leader, standby string) {
	t.Helper()
	leader = lc.Env.Holder(t, operatorNamespace, hyperv1.HypershiftOperatorLeaseName)
	pods := &corev1.PodList{}
	if err := lc.Env.Client.List(t.Context(), pods, client.InNamespace(operatorNamespace), client.MatchingLabels{"app": "hypershift-operator"}); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Name != leader && p.DeletionTimestamp == nil {
			standby = p.Name
		}
	}
	if leader == "" || standby == "" {
		t.Fatalf("the hypershift-operator has no leader (%q) or no other replica (%q)", leader, standby)
	}
	return leader, standby
}

// containerRestarts is the restart count of container in pod ns/name.
func containerRestarts(t *testing.T, ns, name, container string) int32 {
	t.Helper()
	p := &corev1.Pod{}
	if err := lc.Env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
		t.Fatal(err)
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == container {
			return cs.RestartCount
		}
	}
	t.Fatalf("pod %s has no %s container status", name, container)
	return 0
}

// setClusterAnnotation sets an annotation of HostedCluster clusters/name.
func setClusterAnnotation(t *testing.T, name, key, value string) {
	t.Helper()
	hc := &hyperv1.HostedCluster{}
	hc.Namespace, hc.Name = "clusters", name
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, key, value)
	if err := lc.Env.Client.Patch(t.Context(), hc, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
		t.Fatal(err)
	}
}

// sinceOrNone is at-from, or "none" when at is zero.
func sinceOrNone(at, from time.Time) string {
	if at.IsZero() {
		return "none"
	}
	return at.Sub(from).Round(100 * time.Millisecond).String()
}
