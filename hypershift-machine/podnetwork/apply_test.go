package podnetwork

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// testMachine is a machine of the test: a network namespace with a link to
// the other machines, a pod bridge, and one pod in a namespace of its own.
type testMachine struct {
	ns, pod string
	self    Peer
	podIP   netip.Addr
}

// inNamespace runs f on a thread in network namespace name.
func inNamespace(t *testing.T, name string, f func() error) error {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine, in name
		h, err := netns.GetFromName(name)
		if err != nil {
			errc <- err
			return
		}
		defer func() { _ = h.Close() }()
		if err := netns.Set(h); err != nil {
			errc <- err
			return
		}
		errc <- f()
	}()
	return <-errc
}

func run(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// twoMachines makes two machines on one link, each with a pod.
func twoMachines(t *testing.T) (a, b testMachine) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("network namespaces need root, as the real-node tests do")
	}
	suffix := fmt.Sprint(os.Getpid() % 100000)
	machines := []testMachine{
		{ns: "pnA" + suffix, pod: "pnpA" + suffix, podIP: netip.MustParseAddr("10.244.0.2"),
			self: Peer{Node: "a", PodCIDR: netip.MustParsePrefix("10.244.0.0/24"), Address: netip.MustParseAddr("192.0.2.101")}},
		{ns: "pnB" + suffix, pod: "pnpB" + suffix, podIP: netip.MustParseAddr("10.244.1.2"),
			self: Peer{Node: "b", PodCIDR: netip.MustParsePrefix("10.244.1.0/24"), Address: netip.MustParseAddr("192.0.2.102")}},
	}
	for _, m := range machines {
		for _, ns := range []string{m.ns, m.pod} {
			run(t, "ip", "netns", "add", ns)
			t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
		}
	}
	run(t, "ip", "link", "add", "eth0", "netns", machines[0].ns, "type", "veth", "peer", "name", "eth0", "netns", machines[1].ns)
	for _, m := range machines {
		gateway := m.self.PodCIDR.Addr().Next()
		for _, step := range [][]string{
			{"ip", "-n", m.ns, "addr", "add", m.self.Address.String() + "/24", "dev", "eth0"},
			{"ip", "-n", m.ns, "link", "set", "eth0", "up"},
			{"ip", "-n", m.ns, "link", "set", "lo", "up"},
			// What the CNI bridge plugin makes for a pod.
			{"ip", "-n", m.ns, "link", "add", Bridge, "type", "bridge"},
			{"ip", "-n", m.ns, "addr", "add", gateway.String() + "/24", "dev", Bridge},
			{"ip", "-n", m.ns, "link", "set", Bridge, "up"},
			{"ip", "-n", m.ns, "link", "add", "vethpod", "type", "veth", "peer", "name", "eth0", "netns", m.pod},
			{"ip", "-n", m.ns, "link", "set", "vethpod", "master", Bridge, "up"},
			{"ip", "-n", m.pod, "addr", "add", m.podIP.String() + "/24", "dev", "eth0"},
			{"ip", "-n", m.pod, "link", "set", "eth0", "up"},
			{"ip", "-n", m.pod, "link", "set", "lo", "up"},
			{"ip", "-n", m.pod, "route", "add", "default", "via", gateway.String()},
		} {
			run(t, step...)
		}
	}
	return machines[0], machines[1]
}

// reaches says whether a TCP connection from pod from to pod to's address
// is answered, and what it reads back.
func reaches(t *testing.T, from, to testMachine) error {
	t.Helper()
	listening := make(chan net.Listener, 1)
	served := make(chan error, 1)
	go func() {
		served <- inNamespace(t, to.pod, func() error {
			l, err := net.Listen("tcp", net.JoinHostPort(to.podIP.String(), "8080"))
			listening <- l
			if err != nil {
				return err
			}
			conn, err := l.Accept()
			if err != nil {
				return nil // closed: nobody came
			}
			defer func() { _ = conn.Close() }()
			_, err = io.WriteString(conn, "hello from "+to.pod)
			return err
		})
	}()
	l := <-listening
	if l == nil {
		return <-served
	}
	defer func() { _ = l.Close() }()
	return inNamespace(t, from.pod, func() error {
		conn, err := net.DialTimeout("tcp", net.JoinHostPort(to.podIP.String(), "8080"), 2*time.Second)
		if err != nil {
			return err
		}
		defer func() { _ = conn.Close() }()
		_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
		got, err := io.ReadAll(conn)
		if err != nil {
			return err
		}
		if string(got) != "hello from "+to.pod {
			return fmt.Errorf("read %q", got)
		}
		return nil
	})
}

func plan(self Peer, peers ...Peer) Plan {
	return Plan{Self: self, Peers: peers, ClusterNetwork: netip.MustParsePrefix("10.244.0.0/16"), MTU: 1500}
}

// TestApplyRoutesPodsBetweenMachines: two machines on one link, a pod on
// each. Before Apply a pod does not reach the other machine's; after it,
// both ways; a second Apply changes nothing; a plan without the peer takes
// its route away again.
func TestApplyRoutesPodsBetweenMachines(t *testing.T) {
	a, b := twoMachines(t)
	if err := reaches(t, a, b); err == nil {
		t.Fatal("pod a reaches pod b before the pod network is applied: the test proves nothing")
	}
	for _, m := range []struct {
		machine testMachine
		plan    Plan
	}{{a, plan(a.self, b.self)}, {b, plan(b.self, a.self)}} {
		if err := inNamespace(t, m.machine.ns, func() error { return Apply(m.plan) }); err != nil {
			t.Fatalf("Apply on %s: %v", m.machine.ns, err)
		}
	}
	if err := reaches(t, a, b); err != nil {
		t.Errorf("pod a to pod b: %v", err)
	}
	if err := reaches(t, b, a); err != nil {
		t.Errorf("pod b to pod a: %v", err)
	}

	t.Run("a second Apply changes nothing", func(t *testing.T) {
		before := state(t, a.ns)
		if err := inNamespace(t, a.ns, func() error { return Apply(plan(a.self, b.self)) }); err != nil {
			t.Fatal(err)
		}
		if after := state(t, a.ns); after != before {
			t.Errorf("the device, routes or neighbours changed:\nbefore:\n%s\nafter:\n%s", before, after)
		}
	})

	t.Run("a peer that is gone loses its route", func(t *testing.T) {
		if err := inNamespace(t, a.ns, func() error { return Apply(plan(a.self)) }); err != nil {
			t.Fatal(err)
		}
		if s := state(t, a.ns); strings.Contains(s, b.self.PodCIDR.String()) || strings.Contains(s, b.self.MAC().String()) {
			t.Errorf("machine a still routes to b:\n%s", s)
		}
		if err := reaches(t, a, b); err == nil {
			t.Error("pod a still reaches pod b")
		}
	})
}

// state prints a machine's VXLAN device, routes, neighbours and
// forwarding entries, with their kernel indexes.
func state(t *testing.T, ns string) string {
	t.Helper()
	var out strings.Builder
	err := inNamespace(t, ns, func() error {
		link, err := netlink.LinkByName(Device)
		if err != nil {
			return err
		}
		fmt.Fprintf(&out, "link %d %s %s mtu %d\n", link.Attrs().Index, link.Attrs().HardwareAddr, link.Attrs().Flags, link.Attrs().MTU)
		routes, err := netlink.RouteList(link, unix.AF_INET)
		if err != nil {
			return err
		}
		for _, r := range routes {
			fmt.Fprintf(&out, "route %s\n", r)
		}
		for _, family := range []int{unix.AF_INET, unix.AF_BRIDGE} {
			neighs, err := netlink.NeighList(link.Attrs().Index, family)
			if err != nil {
				return err
			}
			for _, n := range neighs {
				fmt.Fprintf(&out, "neigh %d %s %s %d\n", family, n.IP, n.HardwareAddr, n.State)
			}
		}
		return nil
	})
	if err != nil && !errors.As(err, &netlink.LinkNotFoundError{}) {
		t.Fatal(err)
	}
	return out.String()
}

// TestMasquerade: pod traffic that leaves the cluster network reaches its
// destination from the machine's address (the only one the management
// cluster routes back); traffic between pods keeps the pod's. A second
// EnsureMasquerade leaves the rules as they are.
func TestMasquerade(t *testing.T) {
	a, b := twoMachines(t)
	for _, m := range []struct {
		machine testMachine
		plan    Plan
	}{{a, plan(a.self, b.self)}, {b, plan(b.self, a.self)}} {
		if err := inNamespace(t, m.machine.ns, func() error { return errors.Join(Apply(m.plan), EnsureMasquerade(m.plan)) }); err != nil {
			t.Fatalf("on %s: %v", m.machine.ns, err)
		}
	}
	source := func(listenNS string, listen netip.Addr, from testMachine) string {
		t.Helper()
		listening := make(chan net.Listener, 1)
		remote := make(chan string, 1)
		go func() {
			_ = inNamespace(t, listenNS, func() error {
				l, err := net.Listen("tcp", net.JoinHostPort(listen.String(), "8081"))
				listening <- l
				if err != nil {
					return err
				}
				conn, err := l.Accept()
				if err != nil {
					remote <- "no connection"
					return nil
				}
				remote <- conn.RemoteAddr().(*net.TCPAddr).IP.String()
				return conn.Close()
			})
		}()
		l := <-listening
		if l == nil {
			t.Fatal("no listener")
		}
		defer func() { _ = l.Close() }()
		err := inNamespace(t, from.pod, func() error {
			conn, err := net.DialTimeout("tcp", net.JoinHostPort(listen.String(), "8081"), 2*time.Second)
			if err == nil {
				_ = conn.Close()
			}
			return err
		})
		if err != nil {
			t.Fatalf("pod of %s to %s: %v", from.ns, listen, err)
		}
		return <-remote
	}
	if got := source(b.ns, b.self.Address, a); got != a.self.Address.String() {
		t.Errorf("pod a to machine b's address arrives from %s, want machine a's %s", got, a.self.Address)
	}
	if got := source(b.pod, b.podIP, a); got != a.podIP.String() {
		t.Errorf("pod a to pod b arrives from %s, want pod a's %s", got, a.podIP)
	}
	rules := func() string {
		var out string
		if err := inNamespace(t, a.ns, func() error {
			var err error
			out, err = iptables("-t", "nat", "-S")
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	before := rules()
	if err := inNamespace(t, a.ns, func() error { return EnsureMasquerade(plan(a.self, b.self)) }); err != nil {
		t.Fatal(err)
	}
	if after := rules(); after != before {
		t.Errorf("a second EnsureMasquerade changed the rules:\n%s\n->\n%s", before, after)
	}
}
