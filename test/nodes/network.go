package nodes

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"syscall"
)

// Network is the host side of the nodes' network: a bridge with the host's
// address on the nodes' subnet, to which every node's veth is attached,
// and a route to each node's pod subnet through that node. The host
// forwards between nodes (net.ipv4.ip_forward, restored on Close).
type Network struct {
	// Range holds every address below, and the Services' (ServiceRange):
	// the host drops what no more specific route takes, so that nothing
	// addressed to it leaves the machine.
	Range netip.Prefix
	// Bridge is the bridge's name.
	Bridge string
	// Subnet holds the host's and the nodes' addresses; the host has its
	// first address.
	Subnet netip.Prefix
	// PodSubnets holds one /24 pod subnet per node, in node order.
	PodSubnets netip.Prefix
}

// DefaultNetwork is the nodes' network: 198.18.0.0/24 for the host (.1) and
// the nodes (.11 up), 198.19.0.0/16 for their pods and ServiceRange for
// Services, all from the range set aside for network tests (RFC 2544), so
// that it meets no network of the machine's.
var DefaultNetwork = Network{
	Range:      netip.MustParsePrefix("198.18.0.0/15"),
	Bridge:     "hsnodes0",
	Subnet:     netip.MustParsePrefix("198.18.0.0/24"),
	PodSubnets: netip.MustParsePrefix("198.19.0.0/16"),
}

// HostAddress is the host's address on the nodes' subnet: where nodes
// reach the API server and the registry.
func (n Network) HostAddress() netip.Addr { return n.Subnet.Addr().Next() }

// NodeAddress is the address of node i (from 0).
func (n Network) NodeAddress(i int) netip.Addr {
	a := n.Subnet.Addr().As4()
	a[3] = byte(11 + i)
	return netip.AddrFrom4(a)
}

// PodCIDR is the pod subnet of node i.
func (n Network) PodCIDR(i int) netip.Prefix {
	a := n.PodSubnets.Addr().As4()
	a[2] = byte(i)
	return netip.PrefixFrom(netip.AddrFrom4(a), 24)
}

// Up creates the bridge with the host's address and turns forwarding on.
// The caller holds the machine's Lock.
func (n Network) Up(h *Host) error {
	if err := n.checkFree(); err != nil {
		return err
	}
	if err := h.Run([]string{"ip", "link", "del", n.Bridge}, "ip", "link", "add", n.Bridge, "type", "bridge"); err != nil {
		return fmt.Errorf("failed to create the nodes' bridge (is a stopped local cluster's left over? ip link del %s): %w", n.Bridge, err)
	}
	// Nothing addressed to the test range leaves this machine: what no
	// node, pod or Service route takes is dropped here.
	blackhole := n.Range.String()
	if err := h.Run([]string{"ip", "route", "del", "blackhole", blackhole}, "ip", "route", "add", "blackhole", blackhole); err != nil {
		return err
	}
	host := netip.PrefixFrom(n.HostAddress(), n.Subnet.Bits()).String()
	if err := h.Run(nil, "ip", "addr", "add", host, "dev", n.Bridge); err != nil {
		return err
	}
	if err := h.Run(nil, "ip", "link", "set", n.Bridge, "up"); err != nil {
		return err
	}
	return h.Sysctl("net.ipv4.ip_forward", "1")
}

// checkFree refuses a machine on which an address or a route of the
// nodes' range is in use already, naming it: the nodes would take traffic
// meant for it, or lose theirs to it.
func (n Network) checkFree() error {
	for _, args := range [][]string{{"-o", "addr", "show"}, {"-o", "route", "show", "table", "all"}} {
		out, err := exec.Command("ip", args...).Output()
		if err != nil {
			return fmt.Errorf("ip %s: %w", strings.Join(args, " "), err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if used := inUse(line, n.Range); used != "" {
				return fmt.Errorf("the nodes' network %s is in use on this machine: %s (%q); what a killed local cluster left is undone when the next starts, so another network holds it: "+
					"free the range (if it is a local cluster's all the same: `ip link del %s`, `ip route del blackhole %s`)", n.Range, used, strings.Join(strings.Fields(strings.ReplaceAll(line, `\`, " ")), " "), n.Bridge, n.Range)
			}
		}
	}
	return nil
}

// inUse returns the first address or prefix of an `ip -o addr` or
// `ip -o route` line that overlaps r, or "".
func inUse(line string, r netip.Prefix) string {
	for _, field := range strings.Fields(line) {
		p, err := netip.ParsePrefix(field)
		if err != nil {
			a, aerr := netip.ParseAddr(field)
			if aerr != nil {
				continue
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		if p.Overlaps(r) {
			return field
		}
	}
	return ""
}

// attach creates node i's network namespace ns with its veth on the bridge,
// its address and a default route through the host.
func (n Network) attach(h *Host, i int, ns string) error {
	h.keepNetnsDir()
	if err := h.Run([]string{"ip", "netns", "del", ns}, "ip", "netns", "add", ns); err != nil {
		return fmt.Errorf("failed to create network namespace %s (left over from a stopped cluster? ip netns del %s): %w", ns, ns, err)
	}
	hostEnd := fmt.Sprintf("hsveth%d", i)
	// The pair goes with its host end at once; the namespace's deletion
	// would take it only once the kernel has dismantled the namespace.
	if err := h.Run([]string{"ip", "link", "del", hostEnd}, "ip", "link", "add", hostEnd, "type", "veth", "peer", "name", "eth0", "netns", ns); err != nil {
		return err
	}
	steps := [][]string{
		{"ip", "link", "set", hostEnd, "master", n.Bridge, "up"},
		{"ip", "-n", ns, "link", "set", "lo", "up"},
		{"ip", "-n", ns, "addr", "add", netip.PrefixFrom(n.NodeAddress(i), n.Subnet.Bits()).String(), "dev", "eth0"},
		{"ip", "-n", ns, "link", "set", "eth0", "up"},
		{"ip", "-n", ns, "route", "add", "default", "via", n.HostAddress().String()},
		{"ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv4.ip_forward=1"},
	}
	for _, step := range steps {
		if err := h.Run(nil, step...); err != nil {
			return err
		}
	}
	return nil
}

// routePods is the host's route to node i's pods, in podCIDR.
func (n Network) routePods(h *Host, i int, podCIDR netip.Prefix) error {
	return h.Run([]string{"ip", "route", "del", podCIDR.String()},
		"ip", "route", "add", podCIDR.String(), "via", n.NodeAddress(i).String(), "dev", n.Bridge)
}

// keepNetnsDir records, for Close, that /run/netns goes back to what it is
// now: `ip netns add` creates it and mounts it on itself (shared), once per
// machine.
func (h *Host) keepNetnsDir() {
	const dir = "/run/netns"
	h.record(undoStep{NetnsDir: &netnsDirState{Existed: exists(dir), Mounted: len(mountsUnder(dir)) > 0}})
}

// restoreNetnsDir puts /run/netns back as keepNetnsDir found it.
func restoreNetnsDir(was netnsDirState) error {
	const dir = "/run/netns"
	if !was.Mounted {
		for _, m := range mountsUnder(dir) {
			if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil {
				return fmt.Errorf("failed to unmount %s: %w", m, err)
			}
		}
	}
	if !was.Existed {
		// Nodes attached side by side may each have found it missing:
		// the first undo removes it.
		if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// ServiceRange is where Services get their ClusterIPs (the API server's
// --service-cluster-ip-range): inside DefaultNetwork's Range, outside its
// node and pod subnets.
const ServiceRange = "198.18.128.0/20"
