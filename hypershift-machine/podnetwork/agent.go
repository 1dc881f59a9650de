package podnetwork

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"time"

	"github.com/go-logr/logr"
	"github.com/vishvananda/netlink"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Resync is how often the Agent applies its plan when no Node changed: it
// repairs what something else changed in the machine's network.
const Resync = time.Minute

// retry is how soon a pass that failed is tried again; waiting how soon
// one that waits for its Node or kube-proxy looks again.
const (
	retry   = 2 * time.Second
	waiting = 250 * time.Millisecond
)

// errNotYet is a pass that waits: for its Node (registered, with a pod
// subnet and an address), or, before the first CNI configuration, for
// kube-proxy.
var errNotYet = errors.New("not yet")

// Agent keeps one machine's part of the pod network, from the hosted
// cluster's Nodes.
type Agent struct {
	// Client reads the hosted cluster's Nodes.
	Client kubernetes.Interface
	// NodeName is this machine's Node.
	NodeName string
	// ClusterNetwork holds every pod address of the hosted cluster.
	ClusterNetwork netip.Prefix
	// CNIConfigFile is where the CNI configuration goes.
	CNIConfigFile string
	// Log is the Agent's logger.
	Log logr.Logger
	// ServiceProxyHealthz is kube-proxy's health check on this machine
	// (ServiceProxyHealthz when empty): the first CNI configuration waits
	// for it (see pass).
	ServiceProxyHealthz string
}

// ServiceProxyHealthz is where kube-proxy says, on every machine, that it
// has programmed the Services (its default healthz address).
const ServiceProxyHealthz = "http://127.0.0.1:10256/healthz"

// Run keeps the network until ctx ends.
func (a *Agent) Run(ctx context.Context) error {
	factory := informers.NewSharedInformerFactoryWithOptions(a.Client, 0)
	nodes := factory.Core().V1().Nodes()
	changed := make(chan struct{}, 1)
	poke := func(any) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	if _, err := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: poke, DeleteFunc: poke, UpdateFunc: func(_, obj any) { poke(obj) },
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), nodes.Informer().HasSynced) {
		return fmt.Errorf("the hosted cluster's Nodes were not listed: %w", ctx.Err())
	}
	var (
		applied   Plan
		waitedFor string
	)
	timer := time.NewTimer(0)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		case <-timer.C:
		}
		list, err := nodes.Lister().List(labels.Everything())
		if err == nil {
			var plan Plan
			if plan, err = a.pass(list); err == nil && !samePeers(plan, applied) {
				a.Log.Info("Pod network applied", "node", a.NodeName, "podCIDR", plan.Self.PodCIDR.String(), "peers", len(plan.Peers))
				applied = plan
			}
		}
		next := Resync
		switch {
		case errors.Is(err, errNotYet):
			// Said once per reason, looked at again soon.
			if err.Error() != waitedFor {
				a.Log.Info("Pod network waits", "node", a.NodeName, "reason", err.Error())
				waitedFor = err.Error()
			}
			next = waiting
		case err != nil:
			a.Log.Error(err, "Pod network not applied; trying again", "node", a.NodeName)
			next = retry
		}
		timer.Reset(next)
	}
}

// pass applies the plan the Nodes give.
func (a *Agent) pass(list []*corev1.Node) (Plan, error) {
	nodes := make([]corev1.Node, 0, len(list))
	var self *corev1.Node
	for _, n := range list {
		nodes = append(nodes, *n)
		if n.Name == a.NodeName {
			self = n
		}
	}
	if self == nil {
		return Plan{}, fmt.Errorf("%w: node %s does not exist", errNotYet, a.NodeName)
	}
	peer, ok := PeerOf(self)
	if !ok {
		return Plan{}, fmt.Errorf("%w: node %s has no pod subnet (spec.podCIDR) or IPv4 InternalIP yet, or no %s=true label", errNotYet, a.NodeName, NodeLabel)
	}
	mtu, err := linkMTU(peer.Address)
	if err != nil {
		return Plan{}, err
	}
	plan := NewPlan(peer, nodes, a.ClusterNetwork, mtu)
	// The first time, only once kube-proxy has programmed the Services
	// here: a pod that starts before would send its first packets to a
	// Service address untranslated, and the connection tracking keeps
	// them so (CoreDNS then waits a minute for the API). Looked at before
	// anything is applied: a wait costs one local request, not the plan.
	if _, err := os.Stat(a.CNIConfigFile); errors.Is(err, os.ErrNotExist) {
		if err := a.servicesProgrammed(); err != nil {
			return Plan{}, err
		}
	}
	// The CNI configuration last: the kubelet reports the network ready
	// once it is there, and by then it is.
	if err := errors.Join(Apply(plan), EnsureMasquerade(plan)); err != nil {
		return Plan{}, err
	}
	return plan, WriteCNIConfig(plan, a.CNIConfigFile)
}

// servicesProgrammed is nil once kube-proxy on this machine is healthy.
func (a *Agent) servicesProgrammed() error {
	url := a.ServiceProxyHealthz
	if url == "" {
		url = ServiceProxyHealthz
	}
	client := http.Client{Timeout: time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return fmt.Errorf("%w: kube-proxy has not programmed the Services on this machine yet (%s: %w)", errNotYet, url, err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%w: kube-proxy has not programmed the Services on this machine yet (%s: %s)", errNotYet, url, resp.Status)
	}
	return nil
}

// linkMTU is the MTU of the machine's link that holds address.
func linkMTU(address netip.Addr) (int, error) {
	addrs, err := netlink.AddrList(nil, netlink.FAMILY_V4)
	if err != nil {
		return 0, err
	}
	for _, a := range addrs {
		if a.IP.Equal(net.IP(address.AsSlice())) {
			link, err := netlink.LinkByIndex(a.LinkIndex)
			if err != nil {
				return 0, err
			}
			return link.Attrs().MTU, nil
		}
	}
	return 0, fmt.Errorf("no link of this machine has its Node's address %s", address)
}

func samePeers(a, b Plan) bool {
	if a.Self != b.Self || len(a.Peers) != len(b.Peers) {
		return false
	}
	for i := range a.Peers {
		if a.Peers[i] != b.Peers[i] {
			return false
		}
	}
	return true
}
