// Package nodeheartbeat tracks the kubelets' heartbeats, the node Leases
// of kube-node-lease, as this process sees them: when each last changed,
// by this process's clock (never renewTime, which is the kubelet's), and
// which nodes have been silent for a bound and count as lost. Subscribers
// hear when a node is lost and when a lost node heartbeats again (or its
// Lease goes). Nothing is polled: each heartbeat restarts a timer per
// node.
//
// The hypershift-operator's lease arbiter releases, under a fence, the
// Lease of a control-plane-operator leader on a lost node; its HostedCluster
// controller reports a control plane whose kube-apiserver or etcd quorum
// runs only on lost nodes.
package nodeheartbeat

import (
	"context"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// DefaultLostAfter is how long a node's kubelet may be silent (its node
// Lease unchanged, as this process saw it) before the node counts as
// lost: three of the kubelet's 10-second renewals (nodeLeaseDurationSeconds
// 40, renewed every quarter of it), under the kube-controller-manager's
// 50-second grace before it marks the node NotReady.
const DefaultLostAfter = 30 * time.Second

// heartbeat is what was last seen of one node's Lease.
type heartbeat struct {
	// resourceVersion is the node Lease's version last seen; at is when
	// this process first saw it.
	resourceVersion string
	at              time.Time
	// timer fires when the node has been silent for the bound; lost is
	// set when it has fired and no heartbeat came since.
	timer *time.Timer
	lost  bool
}

// Tracker tracks the heartbeats of every node whose Lease it observes.
type Tracker struct {
	after time.Duration
	now   func() time.Time

	mu   sync.Mutex
	seen map[string]*heartbeat
	subs map[int]func(node string, lost bool)
	next int
}

// New returns a Tracker that counts a node lost after silent for after
// (DefaultLostAfter when zero), on the clock now (time.Now when nil).
func New(after time.Duration, now func() time.Time) *Tracker {
	if after <= 0 {
		after = DefaultLostAfter
	}
	if now == nil {
		now = time.Now
	}
	return &Tracker{after: after, now: now, seen: map[string]*heartbeat{}, subs: map[int]func(string, bool){}}
}

// After is the silence after which a node counts as lost.
func (t *Tracker) After() time.Duration { return t.after }

// Subscribe calls fn with a node's name when it is lost (lost true) and
// when a lost node heartbeats again or its Lease is deleted (lost false).
// fn runs on the tracker's goroutines and must not block. The returned
// function unsubscribes.
func (t *Tracker) Subscribe(fn func(node string, lost bool)) func() {
	t.mu.Lock()
	defer t.mu.Unlock()
	id := t.next
	t.next++
	t.subs[id] = fn
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		delete(t.subs, id)
	}
}

// Observe records a node Lease as seen: a new version restarts the node's
// silence, and a lost node is found again.
func (t *Tracker) Observe(lease *coordinationv1.Lease) {
	if lease.Namespace != corev1.NamespaceNodeLease {
		return
	}
	node := lease.Name
	t.mu.Lock()
	seen, ok := t.seen[node]
	found := false
	switch {
	case !ok:
		seen = &heartbeat{}
		t.seen[node] = seen
		seen.timer = time.AfterFunc(t.after, func() { t.fire(node) })
	case seen.resourceVersion == lease.ResourceVersion:
		t.mu.Unlock()
		return
	default:
		seen.timer.Reset(t.after)
		found, seen.lost = seen.lost, false
	}
	seen.resourceVersion, seen.at = lease.ResourceVersion, t.now()
	subs := t.subscribers()
	t.mu.Unlock()
	if found {
		notify(subs, node, false)
	}
}

// fire marks node lost when its timer fires, unless a heartbeat came
// meanwhile (a Reset that raced with the firing).
func (t *Tracker) fire(node string) {
	t.mu.Lock()
	seen, ok := t.seen[node]
	if !ok || seen.lost || t.now().Sub(seen.at) < t.after {
		t.mu.Unlock()
		return
	}
	seen.lost = true
	subs := t.subscribers()
	t.mu.Unlock()
	notify(subs, node, true)
}

// Forget drops a node whose Lease was deleted: nothing is known of it.
func (t *Tracker) Forget(node string) {
	t.mu.Lock()
	seen, ok := t.seen[node]
	if !ok {
		t.mu.Unlock()
		return
	}
	seen.timer.Stop()
	delete(t.seen, node)
	subs := t.subscribers()
	t.mu.Unlock()
	if seen.lost {
		notify(subs, node, false)
	}
}

// Silence returns how long node has been silent, the version of its Lease
// last seen, and false when no Lease of the node has been seen.
func (t *Tracker) Silence(node string) (time.Duration, string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	seen, ok := t.seen[node]
	if !ok {
		return 0, "", false
	}
	return t.now().Sub(seen.at), seen.resourceVersion, true
}

// Lost returns the nodes that count as lost, with how long each has been
// silent.
func (t *Tracker) Lost() map[string]time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	var lost map[string]time.Duration
	for node, seen := range t.seen {
		if seen.lost {
			if lost == nil {
				lost = map[string]time.Duration{}
			}
			lost[node] = t.now().Sub(seen.at)
		}
	}
	return lost
}

// Stop stops every timer.
func (t *Tracker) Stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, seen := range t.seen {
		seen.timer.Stop()
	}
}

// subscribers copies the subscribers, under t.mu, to be called without it.
func (t *Tracker) subscribers() []func(string, bool) {
	subs := make([]func(string, bool), 0, len(t.subs))
	for _, fn := range t.subs {
		subs = append(subs, fn)
	}
	return subs
}

func notify(subs []func(string, bool), node string, lost bool) {
	for _, fn := range subs {
		fn(node, lost)
	}
}

// Watch feeds t from a cache of its own of the node Leases, added to mgr
// with the manager's rules for a runnable that needs no leader election:
// on a manager that runs for the whole process, every replica tracks the
// heartbeats, warm when it comes to lead. The timers stop with the manager.
func (t *Tracker) Watch(mgr manager.Manager) error {
	leases, err := cache.New(mgr.GetConfig(), cache.Options{
		HTTPClient:        mgr.GetHTTPClient(),
		Scheme:            mgr.GetScheme(),
		Mapper:            mgr.GetRESTMapper(),
		DefaultNamespaces: map[string]cache.Config{corev1.NamespaceNodeLease: {}},
		ByObject:          map[client.Object]cache.ByObject{&coordinationv1.Lease{}: {}},
	})
	if err != nil {
		return fmt.Errorf("failed to create the cache of node heartbeats: %w", err)
	}
	if err := mgr.Add(runnable(func(ctx context.Context) error {
		defer t.Stop()
		if err := t.observe(ctx, leases); err != nil {
			return err
		}
		return leases.Start(ctx)
	})); err != nil {
		return fmt.Errorf("failed to add the cache of node heartbeats: %w", err)
	}
	return nil
}

// observe feeds t from the informer of leases' node Leases, before
// leases starts.
func (t *Tracker) observe(ctx context.Context, leases cache.Cache) error {
	informer, err := leases.GetInformer(ctx, &coordinationv1.Lease{}, cache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("failed to watch the node heartbeats: %w", err)
	}
	observe := func(obj any) {
		if lease, ok := obj.(*coordinationv1.Lease); ok {
			t.Observe(lease)
		}
	}
	if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    observe,
		UpdateFunc: func(_, obj any) { observe(obj) },
		DeleteFunc: func(obj any) {
			if gone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = gone.Obj
			}
			if lease, ok := obj.(*coordinationv1.Lease); ok {
				t.Forget(lease.Name)
			}
		},
	}); err != nil {
		return fmt.Errorf("failed to watch the node heartbeats: %w", err)
	}
	return nil
}

// runnable runs on every replica, as the manager's caches do.
type runnable func(ctx context.Context) error

func (r runnable) Start(ctx context.Context) error { return r(ctx) }

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (runnable) NeedLeaderElection() bool { return false }
