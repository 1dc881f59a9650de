package leaderelection

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Per-term controllers. A replica that stops leading without exiting (cut
// off from the API server, then leading again) needs its controllers
// again, and controller-runtime controllers cannot be started twice. So the
// leader-only controllers are set up anew for every term (Manager.AddPerTerm)
// against a term manager: the process's manager, but whose Add keeps what
// it is given for this term only, whose controllers may reuse their names,
// and whose cache removes the term's event handlers from the shared
// informers when the term ends. The caches stay warm across terms; nothing
// of a term outlives it.

// termManager is the manager one term's controllers are set up against.
type termManager struct {
	manager.Manager
	cache      *termCache
	runnables  []manager.Runnable
	controller config.Controller
	// others are the caches besides the manager's that the term's
	// controllers watch through TermCache.
	others []*termCache
}

// TermCache returns c such that the event handlers a term's controllers
// add through it are removed when the term ends, as the manager's cache's
// are, when mgr is a term's manager (AddPerTerm, AddShards); c itself
// otherwise. Controllers that watch a cache of their own (source.Kind on
// it) go through it, or every term leaves its handlers behind.
func TermCache(mgr manager.Manager, c cache.Cache) cache.Cache {
	term, ok := mgr.(*termManager)
	if !ok {
		return c
	}
	tracked := &termCache{Cache: c}
	term.others = append(term.others, tracked)
	return tracked
}

func newTermManager(mgr manager.Manager) *termManager {
	options := mgr.GetControllerOptions()
	options.SkipNameValidation = ptr.To(true)
	return &termManager{Manager: mgr, cache: &termCache{Cache: mgr.GetCache()}, controller: options}
}

// Add keeps r for this term.
func (m *termManager) Add(r manager.Runnable) error {
	m.runnables = append(m.runnables, r)
	return nil
}

// GetCache is the shared cache, with the term's handlers tracked.
func (m *termManager) GetCache() cache.Cache { return m.cache }

// GetControllerOptions lets a term's controllers reuse their names.
func (m *termManager) GetControllerOptions() config.Controller { return m.controller }

// termCache hands out the shared informers with the handlers added through
// them tracked, and removes those handlers when the term ends.
type termCache struct {
	cache.Cache
	mu       sync.Mutex
	handlers []handlerRegistration
}

type handlerRegistration struct {
	informer cache.Informer
	handle   toolscache.ResourceEventHandlerRegistration
}

func (c *termCache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	informer, err := c.Cache.GetInformer(ctx, obj, opts...)
	if err != nil {
		return nil, err
	}
	return &termInformer{Informer: informer, cache: c}, nil
}

func (c *termCache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	informer, err := c.Cache.GetInformerForKind(ctx, gvk, opts...)
	if err != nil {
		return nil, err
	}
	return &termInformer{Informer: informer, cache: c}, nil
}

func (c *termCache) track(informer cache.Informer, handle toolscache.ResourceEventHandlerRegistration, err error) (toolscache.ResourceEventHandlerRegistration, error) {
	if err == nil {
		c.mu.Lock()
		c.handlers = append(c.handlers, handlerRegistration{informer: informer, handle: handle})
		c.mu.Unlock()
	}
	return handle, err
}

// removeHandlers removes every handler the term added.
func (c *termCache) removeHandlers() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for _, h := range c.handlers {
		if err := h.informer.RemoveEventHandler(h.handle); err != nil {
			errs = append(errs, err)
		}
	}
	c.handlers = nil
	return errors.Join(errs...)
}

// termInformer is a shared informer whose handlers belong to a term.
type termInformer struct {
	cache.Informer
	cache *termCache
}

func (i *termInformer) AddEventHandler(handler toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	handle, err := i.Informer.AddEventHandler(handler)
	return i.cache.track(i.Informer, handle, err)
}

func (i *termInformer) AddEventHandlerWithResyncPeriod(handler toolscache.ResourceEventHandler, resync time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	handle, err := i.Informer.AddEventHandlerWithResyncPeriod(handler, resync)
	return i.cache.track(i.Informer, handle, err)
}

func (i *termInformer) AddEventHandlerWithOptions(handler toolscache.ResourceEventHandler, options toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	handle, err := i.Informer.AddEventHandlerWithOptions(handler, options)
	return i.cache.track(i.Informer, handle, err)
}

// runTerm sets up the term's controllers, runs them and every runnable
// added for all terms until ctx ends or one fails, then removes the term's
// handlers.
func runTerm(ctx context.Context, mgr manager.Manager, setups []func(manager.Manager) error, runnables []manager.Runnable) error {
	term := newTermManager(mgr)
	for _, setup := range setups {
		if err := setup(term); err != nil {
			return fmt.Errorf("failed to set up the leader-only controllers: %w", err)
		}
	}
	all := append(append([]manager.Runnable{}, runnables...), term.runnables...)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(all))
	for _, r := range all {
		go func() { errs <- r.Start(ctx) }()
	}
	var failed []error
	for range all {
		if err := <-errs; err != nil {
			failed = append(failed, err)
			cancel()
		}
	}
	failed = append(failed, term.cache.removeHandlers())
	for _, c := range term.others {
		failed = append(failed, c.removeHandlers())
	}
	return errors.Join(failed...)
}
