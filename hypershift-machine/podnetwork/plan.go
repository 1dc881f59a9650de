package podnetwork

import (
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
)

// NodeLabel marks, on a Node, a machine that joins the pod network: the
// kubelet of a machine of platform Pod registers with it, and the
// DaemonSet's node selector takes it.
const NodeLabel = hyperv1.PodNetworkNodeLabel

// Names and sizes of the network's parts.
const (
	// Device is the VXLAN device.
	Device = "hsvxlan0"
	// Bridge is the pods' bridge, the CNI bridge plugin's.
	Bridge = "cni0"
	// VNI is the VXLAN network identifier; the machines of other hosted
	// clusters never name this machine's address, so one is enough.
	VNI = 1
	// Port is VXLAN's UDP port (IANA's).
	Port = 4789
	// Overhead is what VXLAN adds to each packet: the pods' MTU is the
	// machine's less this.
	Overhead = 50
	// CNIConfigFile is the CNI configuration, in containerd's directory.
	CNIConfigFile = "/etc/cni/net.d/10-pod-network.conflist"
)

// Peer is another machine of the network: its pods' subnet reached
// through its VXLAN endpoint.
type Peer struct {
	// Node is the machine's Node.
	Node string
	// PodCIDR is its pods' subnet.
	PodCIDR netip.Prefix
	// Address is the machine's address, where its VXLAN endpoint listens.
	Address netip.Addr
}

// Gateway is the peer's address on the VXLAN network: its pod subnet's
// first address, which no pod gets.
func (p Peer) Gateway() netip.Addr { return p.PodCIDR.Masked().Addr() }

// MAC is the peer's VXLAN MAC.
func (p Peer) MAC() net.HardwareAddr { return MACFor(p.Address) }

// MACFor is the VXLAN MAC of the machine at address: a locally
// administered unicast prefix (0a:58, as OVN derives its MACs) and the
// address's four bytes.
func MACFor(address netip.Addr) net.HardwareAddr {
	a := address.As4()
	return net.HardwareAddr{0x0a, 0x58, a[0], a[1], a[2], a[3]}
}

// Plan is the network one machine keeps.
type Plan struct {
	// Self is this machine.
	Self Peer
	// Peers are the other machines, by Node name.
	Peers []Peer
	// ClusterNetwork holds every pod address: traffic to it is not
	// masqueraded.
	ClusterNetwork netip.Prefix
	// MTU is the machine's link's MTU.
	MTU int
}

// PeerOf reads a Node as a machine of the network: false when it is not
// one (no label), or has no pod subnet or IPv4 InternalIP yet.
func PeerOf(node *corev1.Node) (Peer, bool) {
	if node.Labels[NodeLabel] != "true" || node.Spec.PodCIDR == "" {
		return Peer{}, false
	}
	cidr, err := netip.ParsePrefix(node.Spec.PodCIDR)
	if err != nil || !cidr.Addr().Is4() {
		return Peer{}, false
	}
	for _, a := range node.Status.Addresses {
		if a.Type != corev1.NodeInternalIP {
			continue
		}
		if addr, err := netip.ParseAddr(a.Address); err == nil && addr.Is4() {
			return Peer{Node: node.Name, PodCIDR: cidr.Masked(), Address: addr}, true
		}
	}
	return Peer{}, false
}

// NewPlan is the plan of the machine self among nodes (self included or
// not): every other machine of the network is a peer, in name order.
func NewPlan(self Peer, nodes []corev1.Node, clusterNetwork netip.Prefix, mtu int) Plan {
	p := Plan{Self: self, ClusterNetwork: clusterNetwork.Masked(), MTU: mtu}
	for i := range nodes {
		if peer, ok := PeerOf(&nodes[i]); ok && peer.Node != self.Node && peer.Address != self.Address {
			p.Peers = append(p.Peers, peer)
		}
	}
	slices.SortFunc(p.Peers, func(a, b Peer) int {
		if a.Node < b.Node {
			return -1
		}
		if a.Node > b.Node {
			return 1
		}
		return 0
	})
	return p
}

// CNIConfig is the machine's CNI configuration: its pods on the bridge,
// with addresses from its pod subnet and the VXLAN's MTU. The bridge is
// their gateway; the machine forwards and masquerades for them.
func (p Plan) CNIConfig() ([]byte, error) {
	type obj = map[string]any
	config := obj{
		"cniVersion": "1.0.0",
		"name":       "pod-network",
		"plugins": []obj{
			{
				"type": "bridge", "bridge": Bridge, "isGateway": true, "ipMasq": false, "hairpinMode": true, "mtu": p.MTU - Overhead,
				"ipam": obj{
					"type":   "host-local",
					"ranges": [][]obj{{{"subnet": p.Self.PodCIDR.String()}}},
					"routes": []obj{{"dst": "0.0.0.0/0"}},
				},
			},
			{"type": "portmap", "capabilities": obj{"portMappings": true}},
		},
	}
	data, err := json.MarshalIndent(config, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("failed to write the CNI configuration: %w", err)
	}
	return append(data, '\n'), nil
}
