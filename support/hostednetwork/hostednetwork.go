// Package hostednetwork holds the addresses of a hosted cluster's Service
// network that both operators must agree on: the hypershift-operator
// tells the NodePools' kubelets the DNS address, the control-plane-operator
// gives the kube-dns Service that address.
package hostednetwork

import (
	"fmt"
	"net/netip"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
)

// DNSOffset is the kube-dns Service's place in the first Service network:
// its tenth address, as kubeadm gives it (172.31.0.10 in 172.31.0.0/16).
const DNSOffset = 10

// DNSAddress returns the hosted cluster's DNS address: the DNSOffset-th
// address of its first Service network.
func DNSAddress(serviceNetwork []hyperv1.ServiceNetworkEntry) (netip.Addr, error) {
	if len(serviceNetwork) == 0 {
		return netip.Addr{}, fmt.Errorf("the hosted cluster has no Service network")
	}
	prefix, err := netip.ParsePrefix(serviceNetwork[0].CIDR)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("the hosted cluster's Service network %q: %w", serviceNetwork[0].CIDR, err)
	}
	addr := prefix.Masked().Addr()
	for range DNSOffset {
		addr = addr.Next()
	}
	if !prefix.Contains(addr) {
		return netip.Addr{}, fmt.Errorf("the hosted cluster's Service network %s is too small for a DNS address at offset %d", prefix, DNSOffset)
	}
	return addr, nil
}
