package podnetwork

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Apply makes the machine's network what plan says: the VXLAN device with
// its MAC and gateway address, a route, neighbour and forwarding entry per
// peer (those of machines gone are removed), forwarding on, and bridged
// traffic through iptables (kube-proxy's Services). It sends nothing to the
// kernel that is already so.
func Apply(plan Plan) error {
	link, err := ensureDevice(plan)
	if err != nil {
		return err
	}
	var errs []error
	for _, s := range []struct{ key, value string }{
		{"net/ipv4/ip_forward", "1"},
		{"net/bridge/bridge-nf-call-iptables", "1"},
	} {
		if err := sysctl(s.key, s.value); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, ensurePeers(link, plan.Peers))
	return errors.Join(errs...)
}

// ensureDevice creates the VXLAN device, or checks the existing one, and
// gives it the machine's MAC and gateway address.
func ensureDevice(plan Plan) (netlink.Link, error) {
	mac := MACFor(plan.Self.Address)
	link, err := netlink.LinkByName(Device)
	if err != nil {
		if !errors.As(err, &netlink.LinkNotFoundError{}) {
			return nil, fmt.Errorf("failed to find %s: %w", Device, err)
		}
		vxlan := &netlink.Vxlan{
			LinkAttrs: netlink.LinkAttrs{Name: Device, HardwareAddr: mac, MTU: plan.MTU - Overhead},
			VxlanId:   VNI, SrcAddr: net.IP(plan.Self.Address.AsSlice()), Port: Port, Learning: false,
		}
		if err := netlink.LinkAdd(vxlan); err != nil {
			return nil, fmt.Errorf("failed to create the VXLAN device %s: %w", Device, err)
		}
		if link, err = netlink.LinkByName(Device); err != nil {
			return nil, err
		}
	}
	vxlan, ok := link.(*netlink.Vxlan)
	if !ok || vxlan.VxlanId != VNI || !vxlan.SrcAddr.Equal(net.IP(plan.Self.Address.AsSlice())) {
		// Another device under the name, or the machine's address changed:
		// it is made again on the next pass.
		_ = netlink.LinkDel(link)
		return nil, fmt.Errorf("%s is not the machine's VXLAN device (VNI %d from %s): removed, to be made again", Device, VNI, plan.Self.Address)
	}
	if link.Attrs().HardwareAddr.String() != mac.String() {
		if err := netlink.LinkSetHardwareAddr(link, mac); err != nil {
			return nil, fmt.Errorf("failed to set %s's MAC: %w", Device, err)
		}
	}
	gateway := &netlink.Addr{IPNet: ipNet(netip.PrefixFrom(plan.Self.Gateway(), 32))}
	addrs, err := netlink.AddrList(link, unix.AF_INET)
	if err != nil {
		return nil, err
	}
	if len(addrs) != 1 || !addrs[0].IP.Equal(gateway.IP) {
		for i := range addrs {
			_ = netlink.AddrDel(link, &addrs[i])
		}
		if err := netlink.AddrAdd(link, gateway); err != nil {
			return nil, fmt.Errorf("failed to give %s its address %s: %w", Device, gateway.IP, err)
		}
	}
	if link.Attrs().OperState != netlink.OperUp && link.Attrs().Flags&net.FlagUp == 0 {
		if err := netlink.LinkSetUp(link); err != nil {
			return nil, fmt.Errorf("failed to set %s up: %w", Device, err)
		}
	}
	return link, nil
}

// ensurePeers keeps one route, neighbour and forwarding entry per peer on
// the device, and no other.
func ensurePeers(link netlink.Link, peers []Peer) error {
	index := link.Attrs().Index
	var errs []error
	routes, err := netlink.RouteList(link, unix.AF_INET)
	if err != nil {
		return err
	}
	neighs, err := netlink.NeighList(index, unix.AF_INET)
	if err != nil {
		return err
	}
	fdb, err := netlink.NeighList(index, unix.AF_BRIDGE)
	if err != nil {
		return err
	}
	wantRoute, wantNeigh, wantFDB := map[string]Peer{}, map[string]Peer{}, map[string]Peer{}
	for _, p := range peers {
		wantRoute[p.PodCIDR.String()] = p
		wantNeigh[p.Gateway().String()] = p
		wantFDB[p.MAC().String()] = p
	}
	for i := range routes {
		r := routes[i]
		if r.Dst == nil || r.Dst.IP.To4() == nil {
			continue
		}
		if p, ok := wantRoute[r.Dst.String()]; ok && r.Gw.Equal(net.IP(p.Gateway().AsSlice())) {
			delete(wantRoute, r.Dst.String())
			continue
		}
		if r.Protocol == unix.RTPROT_KERNEL {
			continue
		}
		errs = append(errs, netlink.RouteDel(&r))
	}
	for i := range neighs {
		n := neighs[i]
		if p, ok := wantNeigh[n.IP.String()]; ok && n.HardwareAddr.String() == p.MAC().String() && n.State == netlink.NUD_PERMANENT {
			delete(wantNeigh, n.IP.String())
			continue
		}
		errs = append(errs, netlink.NeighDel(&n))
	}
	for i := range fdb {
		n := fdb[i]
		if n.HardwareAddr.String() == "00:00:00:00:00:00" {
			continue
		}
		if p, ok := wantFDB[n.HardwareAddr.String()]; ok && n.IP.Equal(net.IP(p.Address.AsSlice())) {
			delete(wantFDB, n.HardwareAddr.String())
			continue
		}
		errs = append(errs, netlink.NeighDel(&n))
	}
	for _, p := range wantFDB {
		errs = append(errs, netlink.NeighSet(&netlink.Neigh{
			LinkIndex: index, Family: unix.AF_BRIDGE, State: netlink.NUD_PERMANENT, Flags: netlink.NTF_SELF,
			IP: net.IP(p.Address.AsSlice()), HardwareAddr: p.MAC(),
		}))
	}
	for _, p := range wantNeigh {
		errs = append(errs, netlink.NeighSet(&netlink.Neigh{
			LinkIndex: index, Family: unix.AF_INET, State: netlink.NUD_PERMANENT,
			IP: net.IP(p.Gateway().AsSlice()), HardwareAddr: p.MAC(),
		}))
	}
	for _, p := range wantRoute {
		errs = append(errs, netlink.RouteReplace(&netlink.Route{
			LinkIndex: index, Dst: ipNet(p.PodCIDR), Gw: net.IP(p.Gateway().AsSlice()), Flags: int(netlink.FLAG_ONLINK),
		}))
	}
	return errors.Join(errs...)
}

func ipNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: net.IP(p.Addr().AsSlice()), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

// sysctl sets a sysctl of the machine's network namespace; one whose
// module is not loaded (no /proc/sys/net/bridge without br_netfilter) is
// an error that says so.
func sysctl(key, value string) error {
	path := filepath.Join("/proc/sys", key)
	current, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("failed to read sysctl %s (for net/bridge, the management node must load br_netfilter): %w", key, err)
	}
	if string(current) == value+"\n" {
		return nil
	}
	if err := os.WriteFile(path, []byte(value), 0o644); err != nil {
		return fmt.Errorf("failed to set sysctl %s=%s: %w", key, value, err)
	}
	return nil
}

// WriteCNIConfig writes the plan's CNI configuration, unless it is there
// already: containerd reloads it, and the kubelet reports the network
// ready.
func WriteCNIConfig(plan Plan, path string) error {
	data, err := plan.CNIConfig()
	if err != nil {
		return err
	}
	if current, err := os.ReadFile(path); err == nil && string(current) == string(data) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
