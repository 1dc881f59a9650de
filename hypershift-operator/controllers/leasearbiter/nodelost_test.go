package leasearbiter

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/testutil"
)

// nodeLostAfter is the tests' bound: well inside the short lease (6s), so
// that a takeover before the lease runs out can only be the arbiter's.
const nodeLostAfter = 2 * time.Second

var nodes atomic.Int32

// kubelet renews a node Lease every 300ms, as a kubelet does every 10s,
// until stopped.
type kubelet struct {
	node   string
	cancel context.CancelFunc
	done   chan struct{}
}

func startKubelet(t *testing.T) *kubelet {
	t.Helper()
	k := &kubelet{node: fmt.Sprintf("node-lost-%d", nodes.Add(1)), done: make(chan struct{})}
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: corev1.NamespaceNodeLease, Name: k.node},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(k.node), LeaseDurationSeconds: ptr.To(int32(40))},
	}
	if err := env.Client.Create(t.Context(), lease); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), lease) })
	ctx, cancel := context.WithCancel(context.Background())
	k.cancel = cancel
	go func() {
		defer close(k.done)
		for ctx.Err() == nil {
			now := metav1.NewMicroTime(time.Now())
			lease.Spec.RenewTime = &now
			if err := env.Client.Update(ctx, lease); err != nil {
				_ = env.Client.Get(ctx, client.ObjectKeyFromObject(lease), lease)
			}
			select {
			case <-ctx.Done():
			case <-time.After(300 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(k.stop)
	return k
}

// stop ends the heartbeats, as a lost node's kubelet does.
func (k *kubelet) stop() {
	k.cancel()
	<-k.done
}

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
			node := startKubelet(t)
			cp.podOn(t, "cpo-a", node.node)
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
				node.stop()
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
				if len(notes) != 1 || !strings.HasPrefix(notes[0], "Lease released for cpo-a: its node "+node.node+" stopped heartbeating ") {
					return fmt.Errorf("events %q, want one naming the silent node %s", notes, node.node)
				}
				return nil
			})
		})
	}
}
