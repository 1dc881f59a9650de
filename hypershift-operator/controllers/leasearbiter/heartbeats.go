package leasearbiter

import (
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
)

// DefaultNodeLostAfter is how long a node's kubelet may be silent (its
// node Lease in kube-node-lease unchanged, as this process saw it) before
// the node counts as lost: three of the kubelet's 10-second renewals
// (nodeLeaseDurationSeconds 40, renewed every quarter of it), under the
// kube-controller-manager's 50-second grace before it marks the node
// NotReady. A holder on a lost node is released only under an observed
// fence (see the package documentation), so a node merely slow to renew
// costs a handover, never a second writer; and the Lease goes to a
// standby about 31 s after the node was lost, where the CPO's lease of 60
// s would take 60 to 62.
const DefaultNodeLostAfter = 30 * time.Second

// heartbeat is what was last seen of one node's Lease.
type heartbeat struct {
	// resourceVersion is the node Lease's version last seen; at is when
	// this process first saw it (its own clock: never renewTime, which is
	// the kubelet's).
	resourceVersion string
	at              time.Time
	// timer fires when the node has been silent for the bound.
	timer *time.Timer
}

// heartbeats tracks the kubelets' heartbeats, the node Leases, by node
// name: when each last changed, as this process saw it, and a timer per
// node that calls lost once it has been silent for after.
type heartbeats struct {
	mu    sync.Mutex
	seen  map[string]*heartbeat
	after time.Duration
	now   func() time.Time
	lost  func(node string)
}

// observe records a node Lease as seen: a new version restarts the node's
// silence.
func (h *heartbeats) observe(lease *coordinationv1.Lease) {
	if lease.Namespace != corev1.NamespaceNodeLease {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.seen == nil {
		h.seen = map[string]*heartbeat{}
	}
	node := lease.Name
	seen, ok := h.seen[node]
	switch {
	case !ok:
		seen = &heartbeat{}
		h.seen[node] = seen
		seen.timer = time.AfterFunc(h.after, func() { h.lost(node) })
	case seen.resourceVersion == lease.ResourceVersion:
		return
	default:
		seen.timer.Reset(h.after)
	}
	seen.resourceVersion, seen.at = lease.ResourceVersion, h.now()
}

// forget drops a node whose Lease was deleted: nothing is known of it.
func (h *heartbeats) forget(node string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if seen, ok := h.seen[node]; ok {
		seen.timer.Stop()
		delete(h.seen, node)
	}
}

// silence returns how long node has been silent, the version of its Lease
// last seen, and false when no Lease of the node has been seen.
func (h *heartbeats) silence(node string) (time.Duration, string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	seen, ok := h.seen[node]
	if !ok {
		return 0, "", false
	}
	return h.now().Sub(seen.at), seen.resourceVersion, true
}

// stop stops every timer.
func (h *heartbeats) stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, seen := range h.seen {
		seen.timer.Stop()
	}
}
