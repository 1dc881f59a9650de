package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/cmd/cluster"
	"github.com/hypershift-le/hypershift/support/testutil"
)

// singleReplicaReportGoal is how soon after its node is lost a
// single-replica control plane must be reported unable to serve: the
// hypershift-operator's 30s rule of kubelet silence, up to one 10s
// heartbeat before the loss, and a pass.
const singleReplicaReportGoal = 45 * time.Second

// testSingleReplicaNodeLost: the node of a SingleReplica control plane's
// etcd member (its claim is on the node) is lost. The hosted API is down
// until the node returns; the HostedCluster says so, Available=False
// naming the node, well before the kube-controller-manager marks the node
// NotReady; when the node returns, everything serves again with the data
// kept. The timeline is logged.
func testSingleReplicaNodeLost(t *testing.T) {
	const name = "single"
	createCluster(t, name, hyperv1.SingleReplica)
	ns := controlPlaneNamespace(name)
	h := hosted(t, name)
	h.keepData(t)
	lost := nodeOf(t, ns, "etcd-0")
	moveOperatorLeaderOff(t, lost)
	t.Logf("losing node %s, which runs %s", lost, strings.Join(podsOnNode(t, ns, lost), ", "))

	p := h.probe(t)
	lostAt := time.Now()
	comeBack := loseNode(t, lost)

	var message string
	testutil.Eventually(t, 2*singleReplicaReportGoal, func() error {
		c := available(t, name)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != hyperv1.ControlPlaneNodeLostReason {
			return fmt.Errorf("Available: %+v", c)
		}
		message = c.Message
		return nil
	})
	reported := time.Now()
	if !strings.Contains(message, "node "+lost) {
		t.Errorf("Available's message does not name node %s: %s", lost, message)
	}
	// What it says is true: the data cannot be read.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	err := h.dataKept(ctx)
	cancel()
	if err == nil {
		t.Error("the hosted API served the data while the HostedCluster said it cannot serve")
	}

	comeBack()
	backAt := time.Now()
	h.awaitData(t, 3*time.Minute)
	served := time.Now()
	testutil.Eventually(t, 2*time.Minute, func() error {
		if c := available(t, name); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("Available: %+v", c)
		}
		return nil
	})
	availableAt := time.Now()
	t.Logf("single-replica control plane's node lost: timeline from the loss: Available=False (%s) +%s, node back +%s, data served +%s, Available=True +%s; %q",
		hyperv1.ControlPlaneNodeLostReason, reported.Sub(lostAt).Round(100*time.Millisecond), backAt.Sub(lostAt).Round(time.Second),
		served.Sub(lostAt).Round(time.Second), availableAt.Sub(lostAt).Round(time.Second), message)
	if took := reported.Sub(lostAt); took > singleReplicaReportGoal {
		t.Errorf("the HostedCluster said it cannot serve %s after the node was lost, want <= %s", took.Round(100*time.Millisecond), singleReplicaReportGoal)
	}
	// Serving again means staying up: the probe goes on a while.
	time.Sleep(15 * time.Second)
	finishAllowingFailures(t, p, "while the single-replica control plane's node was lost and came back", served)
	execute(t, cluster.NewDestroyCommand(), "cluster", "--name="+name, "--namespace=clusters", "--wait", "--timeout=4m")
}

// podsOnNode names the pods of ns on node.
func podsOnNode(t *testing.T, ns, node string) []string {
	t.Helper()
	pods := &corev1.PodList{}
	if err := lc.Env.Client.List(t.Context(), pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pods.Items {
		if p.Spec.NodeName == node {
			names = append(names, p.Name)
		}
	}
	return names
}
