package networkpolicy

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Enforcer keeps every node's rules applied while it runs.
type Enforcer struct {
	// Nodes maps a node's name to its network namespace (under
	// /run/netns).
	Nodes map[string]string
	// Config reaches the API server with the right to list and watch
	// pods, namespaces and NetworkPolicies.
	Config *rest.Config

	mu       sync.Mutex
	applied  map[string]NodeRules // by node
	synced   chan struct{}
	syncOnce sync.Once
	lastErr  error
}

// resync is how often the rules are checked even when nothing changed:
// the jumps stay first in FORWARD and INPUT (kube-proxy prepends its own
// to them).
const resync = 10 * time.Second

// Run applies the rules until ctx ends: at once, then after every change
// of a pod, namespace or NetworkPolicy (changes within 100 ms are taken
// together), and every resync. Synced is closed once the first rules are
// applied; LastError says why they are not.
func (e *Enforcer) Run(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		return err
	}
	e.mu.Lock()
	e.applied = map[string]NodeRules{}
	e.mu.Unlock()
	factory := informers.NewSharedInformerFactory(cs, 0)
	pods := factory.Core().V1().Pods()
	namespaces := factory.Core().V1().Namespaces()
	policies := factory.Networking().V1().NetworkPolicies()
	changed := make(chan struct{}, 1)
	poke := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	handler := cache.ResourceEventHandlerFuncs{AddFunc: func(any) { poke() }, UpdateFunc: func(any, any) { poke() }, DeleteFunc: func(any) { poke() }}
	for _, inf := range []cache.SharedIndexInformer{pods.Informer(), namespaces.Informer(), policies.Informer()} {
		if _, err := inf.AddEventHandler(handler); err != nil {
			return err
		}
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("the cache of %v did not sync", typ)
		}
	}
	ticker := time.NewTicker(resync)
	defer ticker.Stop()
	for {
		err := e.apply(pods.Lister().List, namespaces.Lister().List, policies.Lister().List)
		e.mu.Lock()
		e.lastErr = err
		e.mu.Unlock()
		if err != nil {
			klog.ErrorS(err, "Failed to apply the NetworkPolicies' egress rules; trying again")
			time.AfterFunc(time.Second, poke)
		} else {
			e.Synced()
			e.syncOnce.Do(func() { close(e.synced) })
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		case <-ticker.C:
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Synced returns a channel closed once the first rules were applied.
func (e *Enforcer) Synced() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.synced == nil {
		e.synced = make(chan struct{})
	}
	return e.synced
}

// LastError is why the last rules were not applied; nil once they were.
func (e *Enforcer) LastError() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.lastErr
}

// apply computes the rules and restores every node's whose rules changed.
func (e *Enforcer) apply(
	listPods func(labels.Selector) ([]*corev1.Pod, error),
	listNamespaces func(labels.Selector) ([]*corev1.Namespace, error),
	listPolicies func(labels.Selector) ([]*networkingv1.NetworkPolicy, error),
) error {
	var c Cluster
	pods, err := listPods(labels.Everything())
	if err != nil {
		return err
	}
	for _, p := range pods {
		c.Pods = append(c.Pods, *p)
	}
	namespaces, err := listNamespaces(labels.Everything())
	if err != nil {
		return err
	}
	for _, ns := range namespaces {
		c.Namespaces = append(c.Namespaces, *ns)
	}
	policies, err := listPolicies(labels.Everything())
	if err != nil {
		return err
	}
	for _, p := range policies {
		c.Policies = append(c.Policies, *p)
	}
	rules, err := Rules(c)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var errs []string
	for node, netns := range e.Nodes {
		want, had := rules[node], e.applied[node]
		if had.Chains != nil && equalRules(want, had) {
			if err := ensureJumps(netns); err != nil {
				errs = append(errs, fmt.Sprintf("node %s: %v", node, err))
			}
			continue
		}
		var stale []string
		for name := range had.Chains {
			stale = append(stale, name)
		}
		if had.Chains == nil {
			// The first restore on the node: chains an earlier enforcer
			// left go too.
			left, err := chainsOf(netns)
			if err != nil {
				errs = append(errs, fmt.Sprintf("node %s: %v", node, err))
				continue
			}
			stale = append(stale, left...)
		}
		if err := restore(netns, Restore(want, stale)); err != nil {
			errs = append(errs, fmt.Sprintf("node %s: %v", node, err))
			continue
		}
		if want.Chains == nil {
			want.Chains = map[string][]string{}
		}
		e.applied[node] = want
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

func equalRules(a, b NodeRules) bool {
	if len(a.Chains) != len(b.Chains) {
		return false
	}
	for name, specs := range a.Chains {
		if !slices.Equal(specs, b.Chains[name]) {
			return false
		}
	}
	return true
}

// inNetns is a command run in network namespace netns.
func inNetns(netns string, args ...string) *exec.Cmd {
	return exec.Command("nsenter", append([]string{"--net=/run/netns/" + netns, "--"}, args...)...)
}

// chainsOf returns the chains of this package in netns's filter table.
func chainsOf(netns string) ([]string, error) {
	out, err := inNetns(netns, "iptables", "-w", "5", "-S").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("iptables -S: %w: %s", err, strings.TrimSpace(string(out)))
	}
	var chains []string
	for _, line := range strings.Split(string(out), "\n") {
		if name, ok := strings.CutPrefix(line, "-N "); ok && (name == Chain || strings.HasPrefix(name, ChainPrefix)) {
			chains = append(chains, name)
		}
	}
	return chains, nil
}

// restore applies input in netns's filter table, and makes FORWARD and
// INPUT send every packet through Chain first.
func restore(netns, input string) error {
	cmd := inNetns(netns, "iptables-restore", "-w", "5", "--noflush")
	cmd.Stdin = strings.NewReader(input)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("iptables-restore: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return ensureJumps(netns)
}

// ensureJumps makes the first rule of FORWARD (pods' packets to other
// hosts and pods) and of INPUT (pods' packets to their own node: its
// kubelet, its addresses) the jump to Chain, before kube-proxy's, whose
// KUBE-FORWARD accepts the packets it marked.
func ensureJumps(netns string) error {
	for _, builtin := range []string{"FORWARD", "INPUT"} {
		out, err := inNetns(netns, "iptables", "-w", "5", "-S", builtin).CombinedOutput()
		if err != nil {
			return fmt.Errorf("iptables -S %s: %w: %s", builtin, err, strings.TrimSpace(string(out)))
		}
		jump := "-A " + builtin + " -j " + Chain
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) > 1 && lines[1] == jump {
			continue
		}
		for slices.Contains(lines, jump) {
			if out, err := inNetns(netns, "iptables", "-w", "5", "-D", builtin, "-j", Chain).CombinedOutput(); err != nil {
				return fmt.Errorf("iptables -D %s: %w: %s", builtin, err, strings.TrimSpace(string(out)))
			}
			lines = slices.DeleteFunc(lines, func(l string) bool { return l == jump })
		}
		if out, err := inNetns(netns, "iptables", "-w", "5", "-I", builtin, "1", "-j", Chain).CombinedOutput(); err != nil {
			return fmt.Errorf("iptables -I %s: %w: %s", builtin, err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}
