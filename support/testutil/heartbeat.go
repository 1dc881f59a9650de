package testutil

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Heartbeats renews a node's Lease in kube-node-lease every 300ms, as a
// kubelet does every 10s, until stopped: the heartbeat of a node that has
// no kubelet, on an API server of tests.
type Heartbeats struct {
	Node string
	// ctx outlives the test's context, for its cleanups.
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
}

// StartHeartbeats creates node's Lease (deleted when the test ends) and
// renews it until Stop.
func StartHeartbeats(t *testing.T, c client.Client, node string) *Heartbeats {
	t.Helper()
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: corev1.NamespaceNodeLease, Name: node},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(node), LeaseDurationSeconds: ptr.To(int32(40))},
	}
	if err := c.Create(t.Context(), lease); err != nil {
		t.Fatal(err)
	}
	h := &Heartbeats{Node: node, ctx: context.WithoutCancel(t.Context())}
	t.Cleanup(func() { _ = c.Delete(h.ctx, lease) })
	h.start(c, lease)
	t.Cleanup(h.Stop)
	return h
}

func (h *Heartbeats) start(c client.Client, lease *coordinationv1.Lease) {
	ctx, cancel := context.WithCancel(h.ctx)
	h.cancel, h.done = cancel, make(chan struct{})
	go func() {
		defer close(h.done)
		for ctx.Err() == nil {
			now := metav1.NewMicroTime(time.Now())
			lease.Spec.RenewTime = &now
			if err := c.Update(ctx, lease); err != nil {
				_ = c.Get(ctx, client.ObjectKeyFromObject(lease), lease)
			}
			select {
			case <-ctx.Done():
			case <-time.After(300 * time.Millisecond):
			}
		}
	}()
}

// Stop ends the heartbeats, as a lost node's kubelet does.
func (h *Heartbeats) Stop() {
	h.cancel()
	<-h.done
}

// Resume starts the heartbeats again after Stop, as a returning node's
// kubelet does.
func (h *Heartbeats) Resume(c client.Client) {
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: corev1.NamespaceNodeLease, Name: h.Node}}
	_ = c.Get(h.ctx, client.ObjectKeyFromObject(lease), lease)
	h.start(c, lease)
}
