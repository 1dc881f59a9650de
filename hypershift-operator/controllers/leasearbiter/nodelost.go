package leasearbiter

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
)

// releaseIfNodeLost releases the Lease of a holder whose pod object says
// it runs, on a node whose kubelet has been silent for NodeLostAfter (its
// node Lease unchanged, as this process saw it, and as the API server
// confirms), but only where the fence is seen in force: a process on a
// node that is merely cut off may still run, and only the fence keeps its
// writes out once the Lease names another. Without the fence the Lease is
// left to its duration. The timer of the node's heartbeat wakes the Lease
// when the bound passes; nothing is polled meanwhile.
func (r *Reconciler) releaseIfNodeLost(ctx context.Context, hc *hyperv1.HostedCluster, lease *coordinationv1.Lease, holder string) (ctrl.Result, error) {
	node := r.holders.get(client.ObjectKeyFromObject(lease), holder).node
	if node == "" || r.heartbeats == nil {
		return ctrl.Result{}, nil
	}
	silent, version, ok := r.heartbeats.Silence(node)
	if !ok {
		return ctrl.Result{}, nil
	}
	switch left := r.heartbeats.After() - silent; {
	case left > time.Second:
		return ctrl.Result{}, nil
	case left > 0:
		// Woken a moment early.
		return ctrl.Result{RequeueAfter: left}, nil
	}
	// A watch that stalled would make every node look silent: the API
	// server must show the same version of the node's Lease.
	current := &coordinationv1.Lease{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: corev1.NamespaceNodeLease, Name: node}, current); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(fmt.Errorf("failed to read the heartbeat of node %s: %w", node, err))
	}
	if current.ResourceVersion != version {
		r.heartbeats.Observe(current)
		return ctrl.Result{}, nil
	}
	fenced, err := r.fenced(ctx, hc, lease.Namespace)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !fenced {
		ctrl.LoggerFrom(ctx).Info("Not releasing the Lease of a holder on a silent node: the fence is not in force, so the Lease runs its duration", "holder", holder, "node", node, "silent", silent.Round(time.Second).String())
		return ctrl.Result{}, nil
	}
	return r.release(ctx, hc, lease, fmt.Sprintf("its node %s stopped heartbeating %s ago", node, silent.Round(time.Second)))
}

// nodeLost wakes the Leases whose holders were last seen on node, when
// it is lost.
func (r *Reconciler) nodeLost(node string, lost bool) {
	if !lost {
		return
	}
	keys := r.holders.onNode(node)
	if len(keys) == 0 {
		return
	}
	go func() {
		for _, key := range keys {
			r.lostNodes <- event.GenericEvent{Object: &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}}
		}
	}()
}
