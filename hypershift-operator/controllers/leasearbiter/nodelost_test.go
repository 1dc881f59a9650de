package leasearbiter

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/testutil"
)

// nodeLostAfter is the tests' bound: well inside the short lease (6s), so
// that a takeover before the lease runs out can only be the arbiter's.
const nodeLostAfter = 2 * time.Second

var nodes atomic.Int32

// podOn creates a control-plane-operator pod bound to node, reported
// Running.
func (cp *controlPlane) podOn(t *testing.T, name, node string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: cp.ns, Name: name, Labels: PodLabels},
		Spec: corev1.PodSpec{
			NodeName:   node,
			Containers: []corev1.Container{{Name: hyperv1.ControlPlaneOperatorName, Image: "example.com/hypershift:4.17.0"}},
		},
	}
	if err := env.Client.Create(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	setPodStatus(t, pod, corev1.PodRunning, corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}})
	return pod
}

// TestNodeLost: a leader whose node stops heartbeating, while its pod
// object still says Running, is released once the node has been silent
// for NodeLostAfter, under an observed fence only; without the fence its
// standby waits the full lease; a node that keeps heartbeating keeps its
// holder's Lease to the lease-duration rule.
func TestNodeLost(t *testing.T) {
	user := startArbiter(t, func(r *Reconciler) { r.NodeLostAfter = nodeLostAfter })
	for _, tc := range []struct {
		name      string
		fence     fence
		nodeLost  bool
		wantEarly bool
	}{
		{name: "fenced: the standby leads once the node has been silent for the bound", fence: fenced, nodeLost: true, wantEarly: true},
		{name: "not fenced: the standby waits the lease duration", fence: unfenced, nodeLost: true},
		{name: "fenced, the node heartbeating: the standby waits the lease duration", fence: fenced},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cp := newControlPlane(t, tc.fence)
			node := testutil.StartHeartbeats(t, env.Client, fmt.Sprintf("node-lost-%d", nodes.Add(1)))
			cp.podOn(t, "cpo-a", node.Node)
			cp.pod(t, "cpo-b")
			leader := cp.campaign(t, "cpo-a")
			leader.awaitLead(t, 10*time.Second)
			standby := cp.campaign(t, "cpo-b")
			// Longer than the bound, heartbeats going: nothing happens.
			time.Sleep(nodeLostAfter + time.Second)
			if h := cp.holder(t, hyperv1.ControlPlaneOperatorLeaseName); h != "cpo-a" {
				t.Fatalf("the Lease of a leader whose node heartbeats went to %q", h)
			}

			// The node is lost: its kubelet and the leader stop together,
			// the pod object still says Running.
			if tc.nodeLost {
				node.Stop()
			}
			leader.stop()
			lost := time.Now()
			led := standby.awaitLead(t, short.LeaseDuration+5*time.Second)
			took := led.Sub(lost)
			writes := leaseWrites(t, user, cp.ns)
			if !tc.wantEarly {
				if took < short.LeaseDuration-time.Second {
					t.Errorf("the standby led %s after the leader stopped, before the lease duration %s: the Lease was released", took, short.LeaseDuration)
				}
				if len(writes) != 0 {
					t.Errorf("the arbiter wrote the Lease: %s", describe(writes))
				}
				return
			}
			// The last heartbeat came up to 300ms before the loss.
			if took < nodeLostAfter-500*time.Millisecond || took > nodeLostAfter+takeoverBound {
				t.Errorf("the standby led %s after the node was lost; want between %s and %s", took, nodeLostAfter-500*time.Millisecond, nodeLostAfter+takeoverBound)
			} else {
				t.Logf("the standby led %s after the node was lost (bound %s, lease %s)", took.Round(time.Millisecond), nodeLostAfter, short.LeaseDuration)
			}
			if len(writes) != 1 || writes[0].Verb != "update" || code(writes[0]) != 200 {
				t.Errorf("the arbiter's Lease writes: %s, want one successful update", describe(writes))
			}
			testutil.Eventually(t, 10*time.Second, func() error {
				notes := cp.releaseEvents(t)
				if len(notes) != 1 || !strings.HasPrefix(notes[0], "Lease released for cpo-a: its node "+node.Node+" stopped heartbeating ") {
					return fmt.Errorf("events %q, want one naming the silent node %s", notes, node.Node)
				}
				return nil
			})
		})
	}
}
