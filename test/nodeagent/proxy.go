package nodeagent

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// serviceProxy serves Services on their ClusterIPs and NodePorts, as
// kube-proxy does, with one listener per address (see the package
// documentation). It is a controller: Service, Pod and EndpointSlice events
// queue the Service, and a sync makes its listeners match its endpoints.
type serviceProxy struct {
	agent  *Agent
	slices discoverylisters.EndpointSliceLister
	queue  workqueue.TypedRateLimitingInterface[types.NamespacedName]

	mu sync.Mutex
	// listeners by address (ip:port), and the addresses of each Service.
	listeners map[string]*portListener
	owned     map[types.NamespacedName][]string
}

// startProxy watches Services, Pods and EndpointSlices and runs the proxy
// until ctx ends; it returns what must sync first.
func (a *Agent) startProxy(ctx context.Context, factory informers.SharedInformerFactory) ([]cache.InformerSynced, error) {
	slices := factory.Discovery().V1().EndpointSlices()
	p := &serviceProxy{
		agent:  a,
		slices: slices.Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[types.NamespacedName](100*time.Millisecond, 10*time.Second),
			workqueue.TypedRateLimitingQueueConfig[types.NamespacedName]{Name: "nodeagent-proxy"},
		),
		listeners: map[string]*portListener{},
		owned:     map[types.NamespacedName][]string{},
	}
	services := factory.Core().V1().Services().Informer()
	for informer, handler := range map[cache.SharedIndexInformer]func(any){
		services:                              p.enqueueService,
		slices.Informer():                     p.enqueueSliceService,
		factory.Core().V1().Pods().Informer(): p.enqueueNamespace,
	} {
		if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    handler,
			UpdateFunc: func(_, obj any) { handler(obj) },
			DeleteFunc: handler,
		}); err != nil {
			return nil, fmt.Errorf("nodeagent: failed to watch for the proxy: %w", err)
		}
	}
	a.goRun(func() {
		<-ctx.Done()
		p.queue.ShutDown()
	})
	a.goRun(func() {
		for p.next() {
		}
		p.closeAll()
	})
	return []cache.InformerSynced{slices.Informer().HasSynced}, nil
}

func unwrap(obj any) any {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return tombstone.Obj
	}
	return obj
}

func (p *serviceProxy) enqueueService(obj any) {
	if svc, ok := unwrap(obj).(*corev1.Service); ok {
		p.queue.Add(types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name})
	}
}

func (p *serviceProxy) enqueueSliceService(obj any) {
	if slice, ok := unwrap(obj).(*discoveryv1.EndpointSlice); ok && slice.Labels[discoveryv1.LabelServiceName] != "" {
		p.queue.Add(types.NamespacedName{Namespace: slice.Namespace, Name: slice.Labels[discoveryv1.LabelServiceName]})
	}
}

// enqueueNamespace queues every Service of a pod's namespace: its labels,
// address or readiness may change their endpoints.
func (p *serviceProxy) enqueueNamespace(obj any) {
	pod, ok := unwrap(obj).(*corev1.Pod)
	if !ok {
		return
	}
	services, err := p.agent.services.Services(pod.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, svc := range services {
		if len(svc.Spec.Selector) > 0 {
			p.queue.Add(types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name})
		}
	}
}

func (p *serviceProxy) next() bool {
	key, quit := p.queue.Get()
	if quit {
		return false
	}
	defer p.queue.Done(key)
	if err := p.sync(key); err != nil {
		p.agent.log.Error(err, "Failed to serve a service", "service", key)
		p.queue.AddRateLimited(key)
		return true
	}
	p.queue.Forget(key)
	return true
}

// sync makes the Service's listeners match what it wants: one per address
// of a port with ready endpoints, and none for anything else.
func (p *serviceProxy) sync(key types.NamespacedName) error {
	want := map[string][]string{}
	svc, err := p.agent.services.Services(key.Namespace).Get(key.Name)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return err
	case hasClusterIP(svc) && svc.Spec.Type != corev1.ServiceTypeExternalName:
		slices, err := p.slices.EndpointSlices(key.Namespace).List(labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: key.Name}))
		if err != nil {
			return err
		}
		for port, backends := range p.agent.serviceBackends(svc, slices) {
			want[net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(int(port.Port)))] = backends
			if port.NodePort != 0 && (svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer) {
				want[net.JoinHostPort(hostIP, strconv.Itoa(int(port.NodePort)))] = backends
			}
		}
	}
	return p.apply(key, want)
}

// apply updates, opens and closes the Service's listeners.
func (p *serviceProxy) apply(key types.NamespacedName, want map[string][]string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, addr := range p.owned[key] {
		if _, ok := want[addr]; !ok {
			p.listeners[addr].close()
			delete(p.listeners, addr)
		}
	}
	owned := make([]string, 0, len(want))
	var failed error
	for addr, backends := range want {
		l := p.listeners[addr]
		if l == nil {
			l = newPortListener(p.agent.log.WithValues("service", key, "address", addr), addr)
			p.listeners[addr] = l
		}
		owned = append(owned, addr)
		if err := l.setBackends(backends); err != nil {
			failed = err
		}
	}
	if len(owned) == 0 {
		delete(p.owned, key)
	} else {
		p.owned[key] = owned
	}
	return failed
}

func (p *serviceProxy) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for addr, l := range p.listeners {
		l.close()
		delete(p.listeners, addr)
	}
}
