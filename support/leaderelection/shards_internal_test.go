package leaderelection

import (
	"context"
	"testing"
	"time"

	toolscache "k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// TestSettleOnce: the replica settles once, a retry period after its
// member Lease is first held; a member term that begins again (after an
// outage) does not unsettle it, which would hand over every shard it holds.
func TestSettleOnce(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1_800_000_000, 0))
	r := &shardsRunnable{sharding: Sharding{Count: 2, Identity: "a", Timings: timings}, clock: clk, members: map[string]*member{}}
	if r.assigned(0) {
		t.Fatal("assigned a shard before its member Lease was held")
	}
	r.settle()
	clk.Step(timings.RetryPeriod)
	if !r.assigned(0) || !r.assigned(1) {
		t.Fatal("alone and settled, it is not assigned every shard")
	}
	r.settle()
	if !r.assigned(0) {
		t.Fatal("a second member term unsettled the replica")
	}
}

// recordingInformer counts the handlers added and removed.
type recordingInformer struct {
	cache.Informer
	added, removed int
}

func (i *recordingInformer) AddEventHandler(toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	i.added++
	return nil, nil
}

func (i *recordingInformer) RemoveEventHandler(toolscache.ResourceEventHandlerRegistration) error {
	i.removed++
	return nil
}

type recordingCache struct {
	cache.Cache
	informer *recordingInformer
}

func (c recordingCache) GetInformer(context.Context, client.Object, ...cache.InformerGetOption) (cache.Informer, error) {
	return c.informer, nil
}

type bareManager struct {
	manager.Manager
	cache cache.Cache
}

func (m bareManager) GetCache() cache.Cache                   { return m.cache }
func (m bareManager) GetControllerOptions() config.Controller { return config.Controller{} }

// TestTermCacheRemovesItsHandlers: a handler added through TermCache, on a
// cache that is not the manager's, is removed when the term ends; outside
// a term, TermCache is the cache itself.
func TestTermCacheRemovesItsHandlers(t *testing.T) {
	own := recordingCache{informer: &recordingInformer{}}
	mgr := bareManager{cache: recordingCache{informer: &recordingInformer{}}}
	if got := TermCache(mgr, own); got != cache.Cache(own) {
		t.Fatal("outside a term, TermCache wraps the cache")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	setup := func(m manager.Manager) error {
		informer, err := TermCache(m, own).GetInformer(ctx, nil)
		if err != nil {
			return err
		}
		_, err = informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{})
		return err
	}
	if err := runTerm(ctx, mgr, []func(manager.Manager) error{setup}, nil); err != nil {
		t.Fatal(err)
	}
	if own.informer.added != 1 || own.informer.removed != 1 {
		t.Fatalf("handlers added %d, removed %d at the term's end; want 1 and 1", own.informer.added, own.informer.removed)
	}
}
