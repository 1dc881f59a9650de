package leaderelection_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/hypershift-le/hypershift/support/leaderelection"
	"github.com/hypershift-le/hypershift/support/testutil"
)

// TestShardOf: a key's shard is fixed, within the count, and keys spread
// over every shard.
func TestShardOf(t *testing.T) {
	counts := make([]int, 4)
	for i := range 1000 {
		key := fmt.Sprintf("clusters-%d/demo", i)
		s := leaderelection.ShardOf(key, 4)
		if s < 0 || s >= 4 || s != leaderelection.ShardOf(key, 4) {
			t.Fatalf("ShardOf(%q, 4) = %d", key, s)
		}
		counts[s]++
	}
	for s, n := range counts {
		if n < 150 {
			t.Errorf("shard %d got %d of 1000 keys: %v", s, n, counts)
		}
	}
	if s := leaderelection.ShardOf("any/key", 1); s != 0 {
		t.Errorf("with one shard, ShardOf = %d", s)
	}
	// Names that differ in one letter: FNV-1a alone puts every letter with
	// an odd code (a, c, e, ...) in one of two shards, and modulo 4 keeps
	// only the low two bits of each byte.
	for _, count := range []int{2, 4} {
		seen := map[int]int{}
		for c := 'a'; c <= 'z'; c += 2 {
			seen[leaderelection.ShardOf("clusters/prod-"+string(c), count)]++
		}
		if len(seen) < count {
			t.Errorf("13 names prod-a, prod-c, ... prod-y fall into shards %v of %d", seen, count)
		}
	}
}

// terms records which replica runs each shard's term, and fails the test
// when a shard's term starts while another replica's still runs.
type terms struct {
	t      *testing.T
	mu     sync.Mutex
	holder map[int]string
}

func (tr *terms) setup(identity string) func(manager.Manager, int) error {
	return func(m manager.Manager, shard int) error {
		return m.Add(manager.RunnableFunc(func(ctx context.Context) error {
			tr.mu.Lock()
			if h := tr.holder[shard]; h != "" {
				tr.t.Errorf("shard %d: %s began a term while %s's ran", shard, identity, h)
			}
			tr.holder[shard] = identity
			tr.mu.Unlock()
			<-ctx.Done()
			tr.mu.Lock()
			delete(tr.holder, shard)
			tr.mu.Unlock()
			return nil
		}))
	}
}

// held returns the shards identity runs a term of.
func (tr *terms) held(identity string) []int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var shards []int
	for s, h := range tr.holder {
		if h == identity {
			shards = append(shards, s)
		}
	}
	slices.Sort(shards)
	return shards
}

func (tr *terms) await(identity string, want []int, within time.Duration) {
	tr.t.Helper()
	testutil.Eventually(tr.t, within, func() error {
		if got := tr.held(identity); !slices.Equal(got, want) {
			return fmt.Errorf("%s holds shards %v, want %v", identity, got, want)
		}
		return nil
	})
}

// startShards runs a manager with 4 shards as identity until the returned
// stop is called.
func startShards(t *testing.T, namespace, identity string, tr *terms) (stop func()) {
	t.Helper()
	cfg := user(t, identity)
	log := testr.New(t).WithName(identity)
	opts := ctrl.Options{Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"}
	mgr, _, err := leaderelection.NewManager(t.Context(), cfg, opts, leaderelection.Election{Enabled: true, Namespace: namespace, Name: "operator", Timings: short, Identity: identity}, log)
	if err != nil {
		t.Fatal(err)
	}
	sharding := leaderelection.Sharding{Count: 4, Namespace: namespace, Name: "operator", Timings: short, Identity: identity}
	if err := mgr.AddShards(cfg, sharding, tr.setup(identity), log); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("%s stopped with %v", identity, err)
				}
			case <-time.After(20 * time.Second):
				t.Errorf("%s did not stop", identity)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// TestShardsSplitBetweenReplicas: a replica alone holds every shard; a
// second one gets its share handed over, without a shard's terms ever
// overlapping; when it stops, its shards come back at once (released, not
// left to expire).
func TestShardsSplitBetweenReplicas(t *testing.T) {
	ns := namespace(t)
	tr := &terms{t: t, holder: map[int]string{}}
	startShards(t, ns, "replica-a", tr)
	tr.await("replica-a", []int{0, 1, 2, 3}, 30*time.Second)

	stopB := startShards(t, ns, "replica-b", tr)
	// Assigned in turn to the live replicas sorted by identity.
	tr.await("replica-b", []int{1, 3}, 30*time.Second)
	tr.await("replica-a", []int{0, 2}, 5*time.Second)

	stopped := time.Now()
	stopB()
	tr.await("replica-a", []int{0, 1, 2, 3}, 30*time.Second)
	// Well inside the 4s lease duration: released and taken at once, not
	// expired.
	if took := time.Since(stopped); took > 3*time.Second {
		t.Errorf("the shards came back after %s", took)
	}
}
