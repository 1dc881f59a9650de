package podnetwork

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hypershift-le/hypershift/support/testutil"
)

func node(name, podCIDR, address string, member bool) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{PodCIDR: podCIDR}}
	if member {
		n.Labels = map[string]string{NodeLabel: "true"}
	}
	if address != "" {
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: name}, {Type: corev1.NodeInternalIP, Address: address}}
	}
	return n
}

func TestPeerOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		node corev1.Node
		want bool
	}{
		{"a labelled node with a pod subnet and an InternalIP is a peer", node("a", "10.132.1.0/24", "198.19.1.9", true), true},
		{"a node without the label is not (its machine runs no VXLAN endpoint)", node("a", "10.132.1.0/24", "198.19.1.9", false), false},
		{"a node whose pod subnet is not allocated yet is not", node("a", "", "198.19.1.9", true), false},
		{"a node without an InternalIP is not", node("a", "10.132.1.0/24", "", true), false},
		{"an IPv6 pod subnet is not (IPv4 only)", node("a", "fd00::/64", "198.19.1.9", true), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, got := PeerOf(&tc.node); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNewPlan(t *testing.T) {
	self := Peer{Node: "b", PodCIDR: netip.MustParsePrefix("10.132.1.0/24"), Address: netip.MustParseAddr("198.19.1.9")}
	nodes := []corev1.Node{
		node("c", "10.132.2.0/24", "198.19.0.7", true),
		node("b", "10.132.1.0/24", "198.19.1.9", true),
		node("a", "10.132.0.0/24", "198.19.1.8", true),
		node("none-platform", "10.132.3.0/24", "198.18.0.13", false),
	}
	got := NewPlan(self, nodes, netip.MustParsePrefix("10.132.0.0/14"), 1500)
	want := []Peer{
		{Node: "a", PodCIDR: netip.MustParsePrefix("10.132.0.0/24"), Address: netip.MustParseAddr("198.19.1.8")},
		{Node: "c", PodCIDR: netip.MustParsePrefix("10.132.2.0/24"), Address: netip.MustParseAddr("198.19.0.7")},
	}
	if diff := cmp.Diff(want, got.Peers, cmp.Comparer(func(a, b netip.Addr) bool { return a == b }), cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
		t.Errorf("peers: the other members, by name (-want +got):\n%s", diff)
	}
	if gw := got.Peers[0].Gateway().String(); gw != "10.132.0.0" {
		t.Errorf("gateway of a: %s", gw)
	}
	if mac := MACFor(netip.MustParseAddr("198.19.1.8")).String(); mac != "0a:58:c6:13:01:08" {
		t.Errorf("MAC of 198.19.1.8: %s", mac)
	}
	config, err := got.CNIConfig()
	if err != nil {
		t.Fatal(err)
	}
	testutil.CompareBytesWithGolden(t, "10-pod-network.conflist", config)
}
