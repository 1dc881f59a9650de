package leaderelection

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/hypershift-le/hypershift/support/config"
	"github.com/hypershift-le/hypershift/support/leasestate"
)

// Shards. A process whose leader-only work is keyed (one HostedCluster is
// one key) can split it over several Leases, so that several replicas do
// it at once: key k belongs to shard ShardOf(k, n), and shard i is owned
// through the Lease "<name>-shard-<i>", campaigned for with the same
// elector and rules as any Lease (a holder stops its work before its renew
// deadline, a follower takes an expired Lease only after a lease duration
// it saw unchanged). Each replica keeps a member Lease of its own,
// "<name>-member-<hash of its identity>", renewed by the same elector:
// the replicas whose member Lease changed within a lease duration are the
// live ones, and shard i is assigned to the (i mod live)-th of them by
// identity. A replica contends only for the shards assigned to it (the
// elector's Contend), and ends the term of a shard no longer assigned to
// it: its work stops, then it releases the Lease, which the new assignee,
// following, takes at once. When a replica dies, its member Lease and its
// shard Leases go silent together: a lease duration later its shards are
// assigned to the survivors and their Leases taken. Views of who is live
// may differ for a moment between replicas; the shard Leases, not the
// views, keep a shard's work to one replica at a time.

// ShardOf returns the shard of key among count shards: the 64-bit FNV-1a
// hash of the key, its bits mixed by MurmurHash3's finalizer, modulo
// count. It is fixed for a key and a count. The mixing is not optional:
// FNV-1a's low k bits depend only on the low k bits of each byte, so
// modulo 2 it is the parity of the key's odd bytes ("prod-a", "prod-c",
// "prod-e" all in one of two shards).
func ShardOf(key string, count int) int {
	if count <= 1 {
		return 0
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	x := h.Sum64()
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return int(x % uint64(count))
}

// ShardLeaseName names the Lease of shard i of the Leases based on name.
func ShardLeaseName(name string, shard int) string {
	return fmt.Sprintf("%s-shard-%d", name, shard)
}

// memberLeasePrefix begins the names of the member Leases based on name.
func memberLeasePrefix(name string) string { return name + "-member-" }

// memberLeaseName names the member Lease of identity (an identity may hold
// characters a name may not: the name carries its hash).
func memberLeaseName(name, identity string) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(identity))
	return fmt.Sprintf("%s%016x", memberLeasePrefix(name), h.Sum64())
}

// Sharding configures the shards of a process.
type Sharding struct {
	// Count is how many shards there are: fixed for a deployment, every
	// replica must run with the same.
	Count int
	// Namespace and Name place and name the Leases (see ShardLeaseName).
	Namespace, Name string
	// Timings are every shard's and member Lease's.
	Timings config.Timings
	// Identity is this replica's holder identity; empty means Identity().
	Identity string
}

// AddShards runs setup, for every shard this replica comes to hold, at the
// start of each of the shard's terms, with a term manager (see
// term_manager.go) and the shard's index; the controllers it sets up stop
// when the term ends. Losing a shard's Lease to another candidate ends the
// manager's Start with an error wrapping ErrLost, as losing the process's
// own Lease does. restConfig reaches the API server.
func (m *Manager) AddShards(restConfig *rest.Config, s Sharding, setup func(manager.Manager, int) error, log logr.Logger) error {
	if m.direct {
		return errors.New("shards need leader election: run with --leader-elect")
	}
	if s.Count < 1 {
		return fmt.Errorf("the shard count must be at least 1, got %d", s.Count)
	}
	if err := s.Timings.Validate(); err != nil {
		return err
	}
	if s.Identity == "" {
		var err error
		if s.Identity, err = Identity(); err != nil {
			return err
		}
	}
	client, err := NewClient(restConfig)
	if err != nil {
		return err
	}
	r := &shardsRunnable{
		sharding: s, client: client, manager: m, setup: setup, clock: clock.RealClock{},
		log: log.WithName("shards"), members: map[string]*member{},
	}
	return m.Manager.Add(r)
}

// member is one member Lease as this replica saw it.
type member struct {
	holder    string
	rv        string
	changedAt time.Time
}

// shardsRunnable campaigns for the shards and for this replica's member
// Lease, on every replica.
type shardsRunnable struct {
	sharding Sharding
	client   coordinationv1client.LeasesGetter
	manager  *Manager
	setup    func(manager.Manager, int) error
	clock    clock.WithTicker
	log      logr.Logger

	mu      sync.Mutex
	members map[string]*member
	// settledAt is when this replica may start contending: a retry period
	// after its member Lease is held, so that a replica starting beside
	// others (a Recreate rollout) sees them before it takes anything.
	settledAt time.Time
}

func (r *shardsRunnable) NeedLeaderElection() bool { return false }

// Start watches the member Leases, keeps this replica's, and campaigns for
// each shard until ctx ends or a Lease is lost.
func (r *shardsRunnable) Start(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	leases := r.client.Leases(r.sharding.Namespace)
	informer := toolscache.NewSharedIndexInformer(&toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return leases.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return leases.Watch(ctx, opts)
		},
	}, &coordinationv1.Lease{}, 0, toolscache.Indexers{})
	if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    r.observe,
		UpdateFunc: func(_, obj any) { r.observe(obj) },
		DeleteFunc: r.forget,
	}); err != nil {
		return err
	}
	go informer.RunWithContext(ctx)
	// Who else is live is known before anything is contended for.
	if !toolscache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return nil
	}

	errs := make(chan error, r.sharding.Count+1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		errs <- r.keepMember(ctx, leases)
	}()
	for shard := range r.sharding.Count {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- r.campaign(ctx, shard)
		}()
	}
	go func() { wg.Wait(); close(errs) }()
	var failed []error
	for err := range errs {
		if err != nil {
			// The first failure stops the others.
			cancel()
			failed = append(failed, err)
		}
	}
	err := errors.Join(failed...)
	if errors.Is(err, ErrLost) {
		// Kept for the manager's Start, as the process's own Lease's loss
		// is: one that comes while the manager already stops is only
		// logged by controller-runtime.
		r.manager.recordLoss(err)
	}
	return err
}

// keepMember holds this replica's member Lease until ctx ends, and deletes
// the member Leases of replicas long gone.
func (r *shardsRunnable) keepMember(ctx context.Context, leases coordinationv1client.LeaseInterface) error {
	name := memberLeaseName(r.sharding.Name, r.sharding.Identity)
	e, err := New(Config{
		Client: r.client, Namespace: r.sharding.Namespace, Name: name, Identity: r.sharding.Identity,
		Timings: r.sharding.Timings, Log: r.log.WithName("member"),
	})
	if err != nil {
		return err
	}
	return e.Run(ctx, func(ctx context.Context) error {
		r.settle()
		ticker := r.clock.NewTicker(r.sharding.Timings.LeaseDuration)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-ticker.C():
				r.collectGone(ctx, leases)
			}
		}
	})
}

// settle lets the replica contend a retry period from now, the first time
// its member Lease is held: a term that begins again after an outage must
// not stop every shard it holds for a retry period.
func (r *shardsRunnable) settle() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.settledAt.IsZero() {
		r.settledAt = r.clock.Now().Add(r.sharding.Timings.RetryPeriod)
	}
}

// goneAfter is how long a member Lease must have gone unchanged, as this
// replica saw it, before the first live replica deletes it.
const goneAfterLeaseDurations = 10

// collectGone deletes, on the first live replica only, the member Leases
// unchanged for goneAfterLeaseDurations lease durations (pods that ended
// without releasing, or released long ago): a precondition on their
// resourceVersion spares one renewed meanwhile.
func (r *shardsRunnable) collectGone(ctx context.Context, leases coordinationv1client.LeaseInterface) {
	live := r.live()
	if len(live) == 0 || live[0] != r.sharding.Identity {
		return
	}
	r.mu.Lock()
	now := r.clock.Now()
	gone := map[string]string{}
	for name, m := range r.members {
		if now.Sub(m.changedAt) >= goneAfterLeaseDurations*r.sharding.Timings.LeaseDuration {
			gone[name] = m.rv
		}
	}
	r.mu.Unlock()
	for name, rv := range gone {
		err := leases.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			r.log.Info("Failed to delete the member Lease of a replica gone", "lease", name, "err", err.Error())
			continue
		}
		r.log.Info("Deleted the member Lease of a replica gone", "lease", name)
	}
}

// campaign campaigns for one shard until ctx ends or its Lease is lost: a
// term that ends because the shard was assigned elsewhere releases the
// Lease, and the replica follows again.
func (r *shardsRunnable) campaign(ctx context.Context, shard int) error {
	for ctx.Err() == nil {
		e, err := New(Config{
			Client: r.client, Namespace: r.sharding.Namespace, Name: ShardLeaseName(r.sharding.Name, shard),
			Identity: r.sharding.Identity, Timings: r.sharding.Timings, Log: r.log.WithValues("shard", shard),
			Contend: func() bool { return r.assigned(shard) },
		})
		if err != nil {
			return err
		}
		registerMetrics(e)
		err = e.Run(ctx, func(ctx context.Context) error { return r.term(ctx, shard) })
		unregisterMetrics(e)
		if err != nil {
			return fmt.Errorf("shard %d: %w", shard, err)
		}
	}
	return nil
}

// term runs one term of a shard's work, until ctx ends or the shard is
// assigned to another replica (then it returns nil, and the elector
// releases the Lease once the work has stopped).
func (r *shardsRunnable) term(ctx context.Context, shard int) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		ticker := r.clock.NewTicker(r.sharding.Timings.RetryPeriod)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C():
				if !r.assigned(shard) {
					r.log.Info("The shard is assigned to another replica now; handing it over", "shard", shard, "live", r.live())
					cancel()
					return
				}
			}
		}
	}()
	r.log.Info("Leading the shard", "shard", shard)
	return runTerm(ctx, r.manager.Manager, []func(manager.Manager) error{func(m manager.Manager) error { return r.setup(m, shard) }}, nil)
}

// observe records a member Lease's change.
func (r *shardsRunnable) observe(obj any) {
	lease, ok := obj.(*coordinationv1.Lease)
	if !ok || !strings.HasPrefix(lease.Name, memberLeasePrefix(r.sharding.Name)) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.members[lease.Name]
	if m == nil || m.rv != lease.ResourceVersion {
		r.members[lease.Name] = &member{holder: leasestate.Holder(lease), rv: lease.ResourceVersion, changedAt: r.clock.Now()}
	}
}

func (r *shardsRunnable) forget(obj any) {
	if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	if lease, ok := obj.(*coordinationv1.Lease); ok {
		r.mu.Lock()
		defer r.mu.Unlock()
		delete(r.members, lease.Name)
	}
}

// live returns the identities of the live replicas, sorted, this one
// always among them: those whose member Lease has a holder and changed
// within a lease duration.
func (r *shardsRunnable) live() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.clock.Now()
	live := []string{r.sharding.Identity}
	for _, m := range r.members {
		if m.holder != "" && m.holder != r.sharding.Identity && now.Sub(m.changedAt) < r.sharding.Timings.LeaseDuration {
			live = append(live, m.holder)
		}
	}
	slices.Sort(live)
	return slices.Compact(live)
}

// assigned reports whether shard is assigned to this replica now, and
// false until it has settled.
func (r *shardsRunnable) assigned(shard int) bool {
	r.mu.Lock()
	settled := !r.settledAt.IsZero() && !r.clock.Now().Before(r.settledAt)
	r.mu.Unlock()
	if !settled {
		return false
	}
	live := r.live()
	return live[shard%len(live)] == r.sharding.Identity
}
