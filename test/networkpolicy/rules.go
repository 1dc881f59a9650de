// Package networkpolicy enforces the egress rules of NetworkPolicies on the
// local cluster's nodes, with iptables in each node's network namespace, as
// an enforcing CNI does on a real management cluster: the local cluster's
// pod network (the CNI bridge plugin) enforces none.
//
// What it enforces: for every pod (not of the host's network) that a
// NetworkPolicy of policy type Egress selects, the packets of a new
// connection that the pod's node forwards for it, or takes in from it
// (to the node's own addresses), pass only if one egress rule of one such
// policy allows them (to an ipBlock, with its excepts, or to the pods a
// pod and namespace selector pick; on ports, numbered with endPort or
// named);
// everything else is refused (TCP with a reset, the rest with ICMP port
// unreachable, so that a client fails at once and says so). Replies of an
// allowed connection pass. The destination is the one after the node's own
// kube-proxy translation (a Service's address becomes a pod's), as on
// Calico and Cilium.
//
// What it leaves out, and says so in the README: ingress rules (the
// policies of this project isolate by egress), IPv6, and the short time
// between a pod's start and its rules (the rules follow the API server's
// pods, not the CNI's ADD). A named port matches the destination pods'
// container ports of that name and protocol, and nothing toward an
// ipBlock.
//
// Rules computes, as a pure function of the policies, pods and namespaces,
// each node's rules as iptables-restore input; Enforcer keeps them applied.
package networkpolicy

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Chain is the filter chain every forwarded packet of a node goes through
// first; the pods' own chains start with ChainPrefix.
const (
	Chain       = "HS-NETPOL"
	ChainPrefix = "HS-NP-"
)

// repliesRule, first in Chain, lets the packets of allowed connections
// pass.
const repliesRule = "-m conntrack --ctstate ESTABLISHED,RELATED -j RETURN"

// Cluster is what the rules derive from.
type Cluster struct {
	Policies   []networkingv1.NetworkPolicy
	Pods       []corev1.Pod
	Namespaces []corev1.Namespace
}

// NodeRules are one node's rules: its chains by name, each a list of
// rule specifications (iptables -A arguments after the chain's name).
type NodeRules struct {
	Chains map[string][]string
}

// Rules returns, for every node with a pod under an egress policy, its
// rules; a node missing from the result has none (Chain holds only the
// replies' rule).
func Rules(c Cluster) (map[string]NodeRules, error) {
	// Sorted, so that the same cluster gives the same rules.
	byName := func(a, b metav1.Object) int {
		return cmp.Or(strings.Compare(a.GetNamespace(), b.GetNamespace()), strings.Compare(a.GetName(), b.GetName()))
	}
	c.Pods = slices.Clone(c.Pods)
	slices.SortFunc(c.Pods, func(a, b corev1.Pod) int { return byName(&a, &b) })
	c.Policies = slices.Clone(c.Policies)
	slices.SortFunc(c.Policies, func(a, b networkingv1.NetworkPolicy) int { return byName(&a, &b) })
	nsLabels := map[string]labels.Set{}
	for _, ns := range c.Namespaces {
		nsLabels[ns.Name] = ns.Labels
	}
	out := map[string]NodeRules{}
	for _, pod := range c.Pods {
		ip, ok := podIP(pod)
		if !ok || pod.Spec.NodeName == "" {
			continue
		}
		var policies []networkingv1.NetworkPolicy
		for _, p := range c.Policies {
			if p.Namespace != pod.Namespace || !slices.Contains(p.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) {
				continue
			}
			sel, err := metav1.LabelSelectorAsSelector(&p.Spec.PodSelector)
			if err != nil {
				return nil, fmt.Errorf("NetworkPolicy %s/%s: %w", p.Namespace, p.Name, err)
			}
			if sel.Matches(labels.Set(pod.Labels)) {
				policies = append(policies, p)
			}
		}
		if len(policies) == 0 {
			continue
		}
		node := out[pod.Spec.NodeName]
		if node.Chains == nil {
			node.Chains = map[string][]string{Chain: {repliesRule}}
		}
		podChain := chainName(pod.Namespace + "/" + pod.Name)
		node.Chains[Chain] = append(node.Chains[Chain], fmt.Sprintf("-s %s/32 -j %s", ip, podChain))
		var rules []string
		for _, p := range policies {
			for i, rule := range p.Spec.Egress {
				r, sub, err := egressRule(c, nsLabels, p, i, rule)
				if err != nil {
					return nil, err
				}
				rules = append(rules, r...)
				for name, specs := range sub {
					node.Chains[name] = specs
				}
			}
		}
		// A comment holds at most 256 characters.
		comment := fmt.Sprintf("-m comment --comment %q", truncate("egress of "+pod.Namespace+"/"+pod.Name, 200)+" not allowed by a NetworkPolicy")
		rules = append(rules, "-p tcp "+comment+" -j REJECT --reject-with tcp-reset", comment+" -j REJECT --reject-with icmp-port-unreachable")
		node.Chains[podChain] = rules
		out[pod.Spec.NodeName] = node
	}
	return out, nil
}

// egressRule returns the pod chain's rules for one egress rule, and the
// chains of its ipBlocks with excepts.
func egressRule(c Cluster, nsLabels map[string]labels.Set, p networkingv1.NetworkPolicy, index int, rule networkingv1.NetworkPolicyEgressRule) ([]string, map[string][]string, error) {
	where := fmt.Sprintf("NetworkPolicy %s/%s, egress rule %d", p.Namespace, p.Name, index)
	ports := portsOf(rule.Ports)
	var rules []string
	sub := map[string][]string{}
	if len(rule.To) == 0 {
		for _, port := range ports {
			if m, ok := port.match(nil); ok {
				rules = append(rules, spec(m+" -j ACCEPT"))
			}
		}
	}
	for j, peer := range rule.To {
		if peer.IPBlock == nil {
			dests, err := selectedPods(c, nsLabels, p.Namespace, peer)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", where, err)
			}
			for _, d := range dests {
				for _, port := range ports {
					if m, ok := port.match(d.pod); ok {
						rules = append(rules, spec(fmt.Sprintf("-d %s/32 %s -j ACCEPT", d.ip, m)))
					}
				}
			}
			continue
		}
		cidr, err := netip.ParsePrefix(peer.IPBlock.CIDR)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: ipBlock %q: %w", where, peer.IPBlock.CIDR, err)
		}
		if !cidr.Addr().Is4() {
			continue
		}
		var accepts []string
		for _, port := range ports {
			if m, ok := port.match(nil); ok {
				accepts = append(accepts, spec(fmt.Sprintf("-d %s %s -j ACCEPT", cidr.Masked(), m)))
			}
		}
		if len(peer.IPBlock.Except) == 0 {
			rules = append(rules, accepts...)
			continue
		}
		// The excepts return from a chain of their own before its accepts.
		name := chainName(fmt.Sprintf("%s/%s/%d/%d", p.Namespace, p.Name, index, j))
		var specs []string
		for _, except := range peer.IPBlock.Except {
			e, err := netip.ParsePrefix(except)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: except %q: %w", where, except, err)
			}
			specs = append(specs, fmt.Sprintf("-d %s -j RETURN", e.Masked()))
		}
		sub[name] = append(specs, accepts...)
		rules = append(rules, "-j "+name)
	}
	return rules, sub, nil
}

// truncate cuts s to n bytes at most.
func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// spec is a rule specification without the empty matches' spaces.
func spec(s string) string { return strings.Join(strings.Fields(s), " ") }

// portSpec is one port of a rule: a protocol, and a number (with an end)
// or a name, or neither (any port).
type portSpec struct {
	protocol    corev1.Protocol
	number      string
	name        string
	anyProtocol bool
}

// portsOf returns a rule's ports; one matching anything when it has none.
func portsOf(ports []networkingv1.NetworkPolicyPort) []portSpec {
	if len(ports) == 0 {
		return []portSpec{{anyProtocol: true}}
	}
	var out []portSpec
	for _, port := range ports {
		spec := portSpec{protocol: corev1.ProtocolTCP}
		if port.Protocol != nil {
			spec.protocol = *port.Protocol
		}
		switch {
		case port.Port == nil:
		case port.Port.Type == intstr.String:
			spec.name = port.Port.StrVal
		default:
			spec.number = strconv.Itoa(int(port.Port.IntVal))
			if port.EndPort != nil {
				spec.number += ":" + strconv.Itoa(int(*port.EndPort))
			}
		}
		out = append(out, spec)
	}
	return out
}

// match returns the iptables match of the port toward pod (nil: an
// address, not a pod); false when it matches nothing there (a name pod
// has no container port by, or any name toward an address).
func (p portSpec) match(pod *corev1.Pod) (string, bool) {
	if p.anyProtocol {
		return "", true
	}
	proto := strings.ToLower(string(p.protocol))
	number := p.number
	if p.name != "" {
		if pod == nil {
			return "", false
		}
		for _, c := range pod.Spec.Containers {
			for _, cp := range c.Ports {
				if cp.Name == p.name && cmp.Or(cp.Protocol, corev1.ProtocolTCP) == p.protocol {
					number = strconv.Itoa(int(cp.ContainerPort))
				}
			}
		}
		if number == "" {
			return "", false
		}
	}
	if number == "" {
		return "-p " + proto, true
	}
	return fmt.Sprintf("-p %s -m %s --dport %s", proto, proto, number), true
}

// destination is a pod a peer selects, and its address.
type destination struct {
	ip  string
	pod *corev1.Pod
}

// selectedPods returns the pods peer selects, by address.
func selectedPods(c Cluster, nsLabels map[string]labels.Set, namespace string, peer networkingv1.NetworkPolicyPeer) ([]destination, error) {
	podSel := labels.Everything()
	if peer.PodSelector != nil {
		s, err := metav1.LabelSelectorAsSelector(peer.PodSelector)
		if err != nil {
			return nil, err
		}
		podSel = s
	}
	var nsSel labels.Selector
	if peer.NamespaceSelector != nil {
		s, err := metav1.LabelSelectorAsSelector(peer.NamespaceSelector)
		if err != nil {
			return nil, err
		}
		nsSel = s
	}
	var out []destination
	for i := range c.Pods {
		pod := &c.Pods[i]
		ip, ok := podIP(*pod)
		if !ok {
			continue
		}
		if nsSel == nil && pod.Namespace != namespace {
			continue
		}
		if nsSel != nil && !nsSel.Matches(nsLabels[pod.Namespace]) {
			continue
		}
		if podSel.Matches(labels.Set(pod.Labels)) {
			out = append(out, destination{ip: ip, pod: pod})
		}
	}
	slices.SortFunc(out, func(a, b destination) int { return strings.Compare(a.ip, b.ip) })
	return out, nil
}

// podIP returns the IPv4 address of a pod of the pod network that may
// send or receive: scheduled, not of the host's network, not ended.
func podIP(pod corev1.Pod) (string, bool) {
	if pod.Spec.HostNetwork || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return "", false
	}
	for _, ip := range pod.Status.PodIPs {
		if a, err := netip.ParseAddr(ip.IP); err == nil && a.Is4() {
			return a.String(), true
		}
	}
	return "", false
}

// chainName is a chain's name for key: ChainPrefix and a hash (iptables
// chain names hold at most 28 characters).
func chainName(key string) string {
	sum := sha256.Sum256([]byte(key))
	return ChainPrefix + strings.ToUpper(hex.EncodeToString(sum[:])[:16])
}

// Restore returns the iptables-restore --noflush input that makes a
// node's filter table hold rules and no chain of this package's that
// rules lacks (stale, the names the node had before).
func Restore(rules NodeRules, stale []string) string {
	var b strings.Builder
	b.WriteString("*filter\n")
	names := []string{Chain}
	for name := range rules.Chains {
		if name != Chain {
			names = append(names, name)
		}
	}
	slices.Sort(names[1:])
	var gone []string
	for _, name := range stale {
		if _, ok := rules.Chains[name]; !ok && name != Chain {
			gone = append(gone, name)
		}
	}
	slices.Sort(gone)
	// Declaring a chain flushes it (or creates it).
	for _, name := range append(slices.Clone(names), gone...) {
		fmt.Fprintf(&b, ":%s - [0:0]\n", name)
	}
	for _, name := range names {
		specs := rules.Chains[name]
		if name == Chain && len(specs) == 0 {
			specs = []string{repliesRule}
		}
		for _, spec := range specs {
			fmt.Fprintf(&b, "-A %s %s\n", name, spec)
		}
	}
	for _, name := range gone {
		fmt.Fprintf(&b, "-X %s\n", name)
	}
	b.WriteString("COMMIT\n")
	return b.String()
}
