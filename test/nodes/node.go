package nodes

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"text/template"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var (
	//go:embed containerd.toml
	containerdConfig string
	//go:embed kubelet.yaml
	kubeletConfig string
	//go:embed cni.conflist
	cniConfig string
	//go:embed kube-proxy.yaml
	kubeProxyConfig string
)

// Options configure one node.
type Options struct {
	// Name is the node's name.
	Name string
	// Index numbers the node (from 0): its address and pod subnet.
	Index int
	// Network is the nodes' network, up already.
	Network Network
	// Dir holds the node's files (configuration, containerd's images, the
	// kubelet's root directory, logs).
	Dir string
	// RunDir holds its sockets and runtime state; short, since a socket's
	// path is at most 107 bytes.
	RunDir string
	// BinDir holds the kubelet and kube-proxy.
	BinDir string
	// CNIBinDir holds the CNI plugins (bridge, host-local, portmap).
	CNIBinDir string
	// Kubeconfig is the kubelet's kubeconfig: the API server at an address
	// the node reaches, and the node's client certificate.
	Kubeconfig []byte
	// BootstrapKubeconfig, instead of Kubeconfig, makes the kubelet join by
	// TLS bootstrap, as kubeadm's nodes do: with the bootstrap token it
	// holds, the kubelet asks for its client certificate (a
	// CertificateSigningRequest the cluster approves and signs) and writes
	// its own kubeconfig; it also asks for its serving certificate, and
	// rotates both. The API server can then verify the kubelet it reaches.
	BootstrapKubeconfig []byte
	// ProxyKubeconfig is kube-proxy's kubeconfig. Without one, the node
	// runs no kube-proxy of its own: a cluster that runs kube-proxy as a
	// DaemonSet (a hosted cluster's workers) brings it.
	ProxyKubeconfig []byte
	// ClientCA verifies the clients of the kubelet's API (the API server).
	ClientCA []byte
	// SandboxImage is the pause image pods' sandboxes run.
	SandboxImage string
	// Registries maps a registry host, as images name it, to the endpoint
	// the node pulls from (e.g. 127.0.0.1:5000 -> http://198.18.0.1:5000).
	Registries map[string]string
	// ClusterDNS is the DNS server's address pods are given (the kube-dns
	// Service's ClusterIP, serving cluster.local); none when empty.
	ClusterDNS string
	// KubeletConfigDropIn is a KubeletConfiguration over the node's own
	// (kubelet --config-dir): what the cluster a node joins sets, as a
	// NodePool's join material holds it.
	KubeletConfigDropIn []byte
	// PodCIDRFromCluster takes the node's pod subnet from the cluster,
	// whose node IPAM gives every Node one (a hosted cluster's
	// kube-controller-manager does), instead of giving the Node the
	// network's PodCIDR(Index). The node's pods are routed to it only once
	// the subnet is known.
	PodCIDRFromCluster bool
}

// Node is a running node.
type Node struct {
	opts Options
	// Name is the node's name.
	Name string
	// Namespace is the node's network namespace.
	Namespace string
	// Address is the node's address.
	Address string
	// Started is when its first process (containerd) was started, Ready
	// when the API server first showed it Ready.
	Started, Ready time.Time
	// PodCIDR is the node's pod subnet; unset until the cluster gave it
	// (PodCIDRFromCluster).
	PodCIDR netip.Prefix

	mu sync.Mutex
	// procs are the node's own processes by name (containerd, kubelet,
	// kube-proxy), for Lose and RestartKubelet.
	procs map[string]*os.Process
}

// started keeps a process of the node's own, for Lose and RestartKubelet.
func (n *Node) started(name string, cmd *exec.Cmd) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.procs == nil {
		n.procs = map[string]*os.Process{}
	}
	n.procs[name] = cmd.Process
}

// step is one named step of bringing a node up.
type step struct {
	name string
	do   func(context.Context, *Host) error
}

// Start brings node opts.Name up and waits until the API server shows it
// Ready: its network, its files, containerd, the kubelet. Everything it
// changes on the host is undone by h.Close.
func Start(ctx context.Context, h *Host, c client.Client, opts Options) (*Node, error) {
	n := &Node{opts: opts, Name: opts.Name, Namespace: "hs-" + opts.Name, Address: opts.Network.NodeAddress(opts.Index).String()}
	podSubnet := step{"give the Node its pod subnet", func(ctx context.Context, _ *Host) error { return n.setPodCIDR(ctx, c) }}
	if opts.PodCIDRFromCluster {
		podSubnet = step{"take the pod subnet the cluster gave the Node", func(ctx context.Context, _ *Host) error { return n.takePodCIDR(ctx, c) }}
	} else {
		n.PodCIDR = opts.Network.PodCIDR(opts.Index)
	}
	steps := []step{
		{"check the host", func(context.Context, *Host) error { return CheckHost(opts.BinDir, opts.CNIBinDir) }},
		{"attach the network", func(_ context.Context, h *Host) error { return opts.Network.attach(h, opts.Index, n.Namespace) }},
		{"write the configuration", n.writeFiles},
		{"start containerd", func(ctx context.Context, h *Host) error { n.Started = time.Now(); return n.startContainerd(ctx, h) }},
		{"start the kubelet", n.startKubelet},
		podSubnet,
		{"route the pods to the node", func(_ context.Context, h *Host) error { return opts.Network.routePods(h, opts.Index, n.PodCIDR) }},
		{"write the pod network's configuration", n.writeCNIConfig},
		{"start kube-proxy", n.startKubeProxy},
		{"wait until Ready", func(ctx context.Context, _ *Host) error { return n.awaitReady(ctx, c, 60*time.Second) }},
	}
	for _, s := range steps {
		if err := s.do(ctx, h); err != nil {
			return nil, fmt.Errorf("node %s: failed to %s: %w", opts.Name, s.name, err)
		}
	}
	n.Ready = time.Now()
	return n, nil
}

// values fill the configuration templates.
func (n *Node) values() map[string]any {
	return map[string]any{
		"Name": n.opts.Name, "Dir": n.opts.Dir, "RunDir": n.opts.RunDir, "Address": n.Address,
		"PodCIDR": podCIDR(n.PodCIDR), "CgroupRoot": n.cgroupRoot(),
		"SandboxImage": n.opts.SandboxImage, "CNIBinDir": n.opts.CNIBinDir, "Registries": n.opts.Registries,
		"PodSubnets": n.opts.Network.PodSubnets.String(), "ClusterDNS": n.opts.ClusterDNS,
		"Bootstrap": n.opts.BootstrapKubeconfig != nil,
	}
}

func (n *Node) cgroupRoot() string { return "hsnode-" + n.opts.Name }

func (n *Node) writeFiles(_ context.Context, h *Host) error {
	for _, dir := range []string{n.opts.Dir, n.opts.RunDir} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		h.record(undoStep{RemoveAll: dir})
	}
	files := map[string]string{
		"containerd.toml": containerdConfig,
		"kubelet.yaml":    kubeletConfig,
		"kube-proxy.yaml": kubeProxyConfig,
	}
	for name, text := range files {
		if err := n.writeTemplate(name, text); err != nil {
			return err
		}
	}
	if n.opts.BootstrapKubeconfig != nil {
		if err := writeFile(filepath.Join(n.opts.Dir, "bootstrap.kubeconfig"), n.opts.BootstrapKubeconfig); err != nil {
			return err
		}
	} else if err := writeFile(filepath.Join(n.opts.Dir, "kubeconfig"), n.opts.Kubeconfig); err != nil {
		return err
	}
	if n.opts.ProxyKubeconfig != nil {
		if err := writeFile(filepath.Join(n.opts.Dir, "kube-proxy.kubeconfig"), n.opts.ProxyKubeconfig); err != nil {
			return err
		}
	}
	if n.opts.KubeletConfigDropIn != nil {
		if err := writeFile(filepath.Join(n.kubeletConfigDir(), "50-cluster.conf"), n.opts.KubeletConfigDropIn); err != nil {
			return err
		}
	}
	return writeFile(filepath.Join(n.opts.Dir, "pki", "ca.crt"), n.opts.ClientCA)
}

// writeTemplate fills the configuration template text and writes it to
// the node's file name.
func (n *Node) writeTemplate(name, text string) error {
	var b bytes.Buffer
	if err := template.Must(template.New(name).Option("missingkey=error").Parse(text)).Execute(&b, n.values()); err != nil {
		return fmt.Errorf("failed to fill %s: %w", name, err)
	}
	return writeFile(filepath.Join(n.opts.Dir, name), b.Bytes())
}

// writeCNIConfig writes the CNI configuration of the node's pod subnet,
// once it is known: containerd loads it, and the kubelet reports the
// network ready.
func (n *Node) writeCNIConfig(context.Context, *Host) error {
	return n.writeTemplate("cni/10-nodes.conflist", cniConfig)
}

// podCIDR prints a pod subnet, "" when unset.
func podCIDR(p netip.Prefix) string {
	if !p.IsValid() {
		return ""
	}
	return p.String()
}

// kubeletConfigDir holds the drop-ins over the kubelet's configuration.
func (n *Node) kubeletConfigDir() string { return filepath.Join(n.opts.Dir, "kubelet.conf.d") }

func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

// startContainerd starts containerd in the node's network namespace and
// waits for its socket. Its shims outlive it: they are killed with it,
// and what it mounted is unmounted after.
func (n *Node) startContainerd(ctx context.Context, h *Host) error {
	h.UnmountUnder(n.opts.Dir)
	h.UnmountUnder(n.opts.RunDir)
	socket := filepath.Join(n.opts.RunDir, "containerd.sock")
	h.record(undoStep{KillMatching: socket})
	cmd := n.inNetwork("containerd", "--config", filepath.Join(n.opts.Dir, "containerd.toml"))
	if err := logTo(cmd, filepath.Join(n.opts.Dir, "containerd.log")); err != nil {
		return err
	}
	if err := h.Start(cmd, 10*time.Second); err != nil {
		return err
	}
	n.started("containerd", cmd)
	return waitFor(ctx, 30*time.Second, func() error {
		conn, err := net.Dial("unix", socket)
		if err == nil {
			_ = conn.Close()
		}
		return err
	}, func() string { return tail(filepath.Join(n.opts.Dir, "containerd.log")) })
}

// startKubelet starts the kubelet in the node's network namespace. It sets
// three kernel sysctls by itself; they are restored when it is gone, and
// its cgroups removed.
func (n *Node) startKubelet(_ context.Context, h *Host) error {
	if err := h.KeepSysctls("vm.overcommit_memory", "kernel.panic", "kernel.panic_on_oops"); err != nil {
		return err
	}
	if err := h.Cgroup(n.cgroupRoot()); err != nil {
		return err
	}
	args := []string{
		"--config=" + filepath.Join(n.opts.Dir, "kubelet.yaml"),
		"--kubeconfig=" + filepath.Join(n.opts.Dir, "kubeconfig"),
		"--root-dir=" + filepath.Join(n.opts.Dir, "kubelet"),
		"--cert-dir=" + filepath.Join(n.opts.Dir, "pki"),
		"--hostname-override=" + n.opts.Name,
		"--node-ip=" + n.Address,
	}
	if n.opts.KubeletConfigDropIn != nil {
		args = append(args, "--config-dir="+n.kubeletConfigDir())
	}
	if n.opts.BootstrapKubeconfig != nil {
		args = append(args, "--bootstrap-kubeconfig="+filepath.Join(n.opts.Dir, "bootstrap.kubeconfig"))
	}
	cmd := n.inNetwork(filepath.Join(n.opts.BinDir, "kubelet"), args...)
	if err := logTo(cmd, filepath.Join(n.opts.Dir, "kubelet.log")); err != nil {
		return err
	}
	kubeletStarts.Lock()
	defer kubeletStarts.Unlock()
	if kubeletDir := filepath.Dir(filepath.Dir(devicePluginSocket)); !exists(kubeletDir) {
		h.record(undoStep{RemoveAll: kubeletDir})
	}
	started := time.Now()
	if err := h.Start(cmd, 20*time.Second); err != nil {
		return err
	}
	n.started("kubelet", cmd)
	awaitDevicePluginSocket(started, 20*time.Second)
	return nil
}

// devicePluginSocket is where every kubelet serves device plugin
// registration: the kubelet does not derive it from --root-dir
// (k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1.KubeletSocket), so the
// nodes, which share this machine's file system, share it.
const devicePluginSocket = "/var/lib/kubelet/device-plugins/kubelet.sock"

// kubeletStarts keeps kubelets from starting their device managers at the
// same time: each empties the socket's directory, then listens on it, and
// two doing so at once make one fail with "address already in use" and
// exit ("Failed to start ContainerManager"). One at a time, each replaces
// the last one's socket, which no device plugin of these nodes dials.
var kubeletStarts sync.Mutex

// awaitDevicePluginSocket waits until a kubelet started at started has
// created its device plugin socket, or timeout passes (a kubelet that
// fails before then is reported by the wait for its Node).
func awaitDevicePluginSocket(started time.Time, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if fi, err := os.Stat(devicePluginSocket); err == nil && fi.ModTime().After(started) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// inNetwork is a command that runs program in the node's network namespace
// only: nsenter, not `ip netns exec`, whose mount namespace of its own (with
// /sys remounted) would hide the kubelet's volume mounts from containerd and
// the cgroup hierarchies from both.
func (n *Node) inNetwork(program string, args ...string) *exec.Cmd {
	return exec.Command("nsenter", append([]string{"--net=/run/netns/" + n.Namespace, "--", program}, args...)...)
}

// startKubeProxy starts kube-proxy in the node's network namespace: its
// iptables rules are the namespace's, gone with it.
func (n *Node) startKubeProxy(_ context.Context, h *Host) error {
	if n.opts.ProxyKubeconfig == nil {
		return nil
	}
	cmd := n.inNetwork(filepath.Join(n.opts.BinDir, "kube-proxy"), "--config="+filepath.Join(n.opts.Dir, "kube-proxy.yaml"))
	if err := logTo(cmd, filepath.Join(n.opts.Dir, "kube-proxy.log")); err != nil {
		return err
	}
	if err := h.Start(cmd, 10*time.Second); err != nil {
		return err
	}
	n.started("kube-proxy", cmd)
	return nil
}

// setPodCIDR gives the Node, once registered, the pod subnet its CNI
// configuration allocates from, as kube-controller-manager's node IPAM
// would: kubectl get nodes shows it, kube-proxy reads it.
func (n *Node) setPodCIDR(ctx context.Context, c client.Client) error {
	cidr := n.PodCIDR.String()
	return waitFor(ctx, 30*time.Second, func() error {
		node := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKey{Name: n.opts.Name}, node); err != nil {
			return err
		}
		if node.Spec.PodCIDR == cidr {
			return nil
		}
		patch := client.MergeFrom(node.DeepCopy())
		node.Spec.PodCIDR, node.Spec.PodCIDRs = cidr, []string{cidr}
		return c.Patch(ctx, node, patch)
	}, func() string { return tail(filepath.Join(n.opts.Dir, "kubelet.log")) })
}

// takePodCIDR waits until the cluster gave the registered Node its pod
// subnet, and takes it.
func (n *Node) takePodCIDR(ctx context.Context, c client.Client) error {
	return waitFor(ctx, 30*time.Second, func() error {
		node := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKey{Name: n.opts.Name}, node); err != nil {
			return err
		}
		if node.Spec.PodCIDR == "" {
			return errors.New("the Node has no spec.podCIDR yet (does the cluster's kube-controller-manager allocate node CIDRs?)")
		}
		cidr, err := netip.ParsePrefix(node.Spec.PodCIDR)
		if err != nil {
			return err
		}
		n.PodCIDR = cidr
		return nil
	}, func() string { return tail(filepath.Join(n.opts.Dir, "kubelet.log")) })
}

// awaitReady waits until the Node is Ready; otherwise it says why, with
// the kubelet's last log lines.
func (n *Node) awaitReady(ctx context.Context, c client.Client, timeout time.Duration) error {
	return n.awaitReadySince(ctx, c, time.Time{}, timeout)
}

// waitFor polls check until it succeeds or timeout passes; then it fails
// with check's last error and what log says.
func waitFor(ctx context.Context, timeout time.Duration, check func() error, log func() string) error {
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("not done after %s: %w; the last lines of its log:\n%s", timeout, err, log())
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func logTo(cmd *exec.Cmd, path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = f, f
	return nil
}

// tail returns the last 20 lines of a log file.
func tail(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-20):], "\n")
}

// killMatching kills every process whose command line contains s.
func killMatching(s string) error {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		data, err := os.ReadFile(p)
		if err != nil || !strings.Contains(strings.ReplaceAll(string(data), "\x00", " "), s) {
			continue
		}
		var pid int
		if _, err := fmt.Sscanf(p, "/proc/%d/cmdline", &pid); err == nil && pid != os.Getpid() {
			if proc, err := os.FindProcess(pid); err == nil {
				_ = proc.Kill()
			}
		}
	}
	return nil
}

// Ready tells a Node whose Ready condition is True.
func Ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
