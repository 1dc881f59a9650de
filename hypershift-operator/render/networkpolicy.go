package render

import (
	"errors"
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	infrav1 "github.com/hypershift-le/hypershift/api/infrastructure/v1beta1"
)

// Names of the NetworkPolicies of a control-plane namespace.
const (
	MachinesEgressPolicyName      = "machines-egress"
	KubeAPIServerEgressPolicyName = "kube-apiserver-egress"
)

// NetworkPolicyLabel marks the NetworkPolicies the hypershift-operator
// renders: its cache holds only those.
const NetworkPolicyLabel = "hypershift.openshift.io/network-policy"

// Isolation is where the management cluster's own addresses are, which
// the tenants' side of a hosted cluster may not reach.
type Isolation struct {
	// ManagementNetworks hold every address of the management cluster:
	// its nodes (and their kubelets), pods, Services, API server and
	// etcd. Empty: no NetworkPolicy is rendered.
	ManagementNetworks []netip.Prefix
	// MachineEndpoints are addresses inside ManagementNetworks the
	// machines may reach all the same, such as the image registry they
	// pull hosted pods' images from.
	MachineEndpoints []netip.AddrPort
}

// ParseIsolation parses the HO's --management-cluster-networks (IPv4
// CIDRs) and --machine-allowed-endpoints (IPv4 address:port), naming the
// flag of a value it refuses.
func ParseIsolation(networks, endpoints []string) (Isolation, error) {
	var iso Isolation
	var errs []error
	for _, cidr := range networks {
		p, err := netip.ParsePrefix(cidr)
		if err != nil || !p.Addr().Is4() {
			errs = append(errs, fmt.Errorf("--management-cluster-networks: %q is not an IPv4 CIDR such as 10.128.0.0/14", cidr))
			continue
		}
		iso.ManagementNetworks = append(iso.ManagementNetworks, p.Masked())
	}
	for _, endpoint := range endpoints {
		a, err := netip.ParseAddrPort(endpoint)
		if err != nil || !a.Addr().Is4() {
			errs = append(errs, fmt.Errorf("--machine-allowed-endpoints: %q is not an IPv4 address and port such as 10.0.0.5:5000", endpoint))
			continue
		}
		iso.MachineEndpoints = append(iso.MachineEndpoints, a)
	}
	if len(endpoints) > 0 && len(networks) == 0 {
		errs = append(errs, errors.New("--machine-allowed-endpoints needs --management-cluster-networks: without them nothing is isolated"))
	}
	return iso, errors.Join(errs...)
}

// NetworkPolicies returns the NetworkPolicies that keep the tenant's side
// of the hosted cluster off the management cluster, as HyperShift's
// policies of a control-plane namespace do; none without management
// networks. Both limit egress only (the pods' other traffic is the
// management cluster's to decide), and both let DNS through to the
// management cluster's kube-dns:
//
//   - machines-egress, on the machines of platform Pod (whose pods' traffic
//     leaves the machine with the machine's address, and whose
//     host-network pods share its network): to the cluster's other
//     machines, to its kube-apiserver's pods and published endpoint, to
//     MachineEndpoints, and to anything outside ManagementNetworks. Not to
//     the management cluster's API server, etcd or kubelets, nor to any
//     control plane, its own etcd included.
//   - kube-apiserver-egress, on the hosted kube-apiserver (which calls the
//     URLs of the tenant's webhooks and aggregated APIs): to its own
//     control-plane namespace (its etcd, the machines' kubelets) and to
//     anything outside ManagementNetworks.
//
// endpoint is the published endpoint (the HostedCluster's
// status.controlPlaneEndpoint), nil until the control plane published
// it; a host that is not an IP address adds no rule (a NodePort on a
// management node's address, the local platform's way, is one).
func NetworkPolicies(in Inputs, iso Isolation, endpoint *hyperv1.APIEndpoint) []*networkingv1.NetworkPolicy {
	if len(iso.ManagementNetworks) == 0 {
		return nil
	}
	meta := func(name string) metav1.ObjectMeta {
		m := in.objectMeta(name)
		m.Labels = map[string]string{NetworkPolicyLabel: "true"}
		return m
	}
	outside := outsidePeers(iso.ManagementNetworks)
	dns := networkingv1.NetworkPolicyEgressRule{
		To: []networkingv1.NetworkPolicyPeer{{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: metav1.NamespaceSystem}},
			PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"k8s-app": "kube-dns"}},
		}},
		Ports: []networkingv1.NetworkPolicyPort{
			port(corev1.ProtocolUDP, intstr.FromInt32(53)), port(corev1.ProtocolTCP, intstr.FromInt32(53)),
			port(corev1.ProtocolUDP, intstr.FromString("dns")), port(corev1.ProtocolTCP, intstr.FromString("dns-tcp")),
		},
	}
	kubeAPIServer := &metav1.LabelSelector{MatchLabels: map[string]string{hyperv1.ControlPlaneComponentLabel: hyperv1.KubeAPIServerComponent}}

	machines := []networkingv1.NetworkPolicyEgressRule{
		{To: []networkingv1.NetworkPolicyPeer{{PodSelector: machineSelector()}}},
		{
			To:    []networkingv1.NetworkPolicyPeer{{PodSelector: kubeAPIServer}},
			Ports: []networkingv1.NetworkPolicyPort{port(corev1.ProtocolTCP, intstr.FromInt32(hyperv1.KubeAPIServerPort))},
		},
	}
	if endpoint != nil {
		if addr, err := netip.ParseAddr(endpoint.Host); err == nil {
			machines = append(machines, hostRule(netip.AddrPortFrom(addr, uint16(endpoint.Port))))
		}
	}
	for _, e := range iso.MachineEndpoints {
		machines = append(machines, hostRule(e))
	}
	machines = append(machines, networkingv1.NetworkPolicyEgressRule{To: outside}, dns)

	return []*networkingv1.NetworkPolicy{
		{
			TypeMeta:   metav1.TypeMeta{APIVersion: networkingv1.SchemeGroupVersion.String(), Kind: "NetworkPolicy"},
			ObjectMeta: meta(MachinesEgressPolicyName),
			Spec: networkingv1.NetworkPolicySpec{
				PodSelector: *machineSelector(),
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
				Egress:      machines,
			},
		},
		{
			TypeMeta:   metav1.TypeMeta{APIVersion: networkingv1.SchemeGroupVersion.String(), Kind: "NetworkPolicy"},
			ObjectMeta: meta(KubeAPIServerEgressPolicyName),
			Spec: networkingv1.NetworkPolicySpec{
				PodSelector: *kubeAPIServer,
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
				Egress: []networkingv1.NetworkPolicyEgressRule{
					{To: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}},
					{To: outside},
					dns,
				},
			},
		},
	}
}

// machineSelector selects the machines of platform Pod.
func machineSelector() *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: infrav1.MachinePodLabel, Operator: metav1.LabelSelectorOpExists,
	}}}
}

// outsidePeers are every IPv4 address but those of networks.
func outsidePeers(networks []netip.Prefix) []networkingv1.NetworkPolicyPeer {
	block := &networkingv1.IPBlock{CIDR: "0.0.0.0/0"}
	for _, n := range networks {
		if n.Addr().Is4() {
			block.Except = append(block.Except, n.Masked().String())
		}
	}
	return []networkingv1.NetworkPolicyPeer{{IPBlock: block}}
}

// hostRule allows one TCP address and port.
func hostRule(e netip.AddrPort) networkingv1.NetworkPolicyEgressRule {
	return networkingv1.NetworkPolicyEgressRule{
		To:    []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: netip.PrefixFrom(e.Addr(), e.Addr().BitLen()).String()}}},
		Ports: []networkingv1.NetworkPolicyPort{port(corev1.ProtocolTCP, intstr.FromInt32(int32(e.Port())))},
	}
}

func port(protocol corev1.Protocol, p intstr.IntOrString) networkingv1.NetworkPolicyPort {
	return networkingv1.NetworkPolicyPort{Protocol: ptr.To(protocol), Port: ptr.To(p)}
}
