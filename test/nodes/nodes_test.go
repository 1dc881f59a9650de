package nodes_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hypershift-le/hypershift/hack/images"
	"github.com/hypershift-le/hypershift/support/releaseinfo/releasetest"
	"github.com/hypershift-le/hypershift/test/internal/pods"
	"github.com/hypershift-le/hypershift/test/nodes"
	"github.com/hypershift-le/hypershift/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		crashWithNodesUp(dir)
	}
	os.Exit(testenv.Main(m, testenv.Options{
		SkipAdmissionPolicies: true,
		BindAddress:           "0.0.0.0",
		ServingIPs:            []string{nodes.DefaultNetwork.HostAddress().String()},
		KubeletClient:         true,
		ServiceClusterIPRange: nodes.ServiceRange,
		// Services get their endpoints; namespaces their ServiceAccount
		// (kube-proxy's in-cluster peers need none).
		ControllerManager:            true,
		ControllerManagerControllers: []string{"endpointslice-controller", "namespace-controller", "garbage-collector-controller"},
	}, &env))
}

// TestNodesRunOurImages brings two real nodes up (each its own network
// namespace, containerd and kubelet), joined to the API server with client
// certificates. A pod of the product image runs the CLI for real: its
// imageID carries the pushed digest, and its log comes from the kubelet
// through the API server, as kubectl logs reads it. A pod on one node
// reaches a pod on the other at its address. Stopping leaves the host as
// it was.
func TestNodesRunOurImages(t *testing.T) {
	nodes.LockForTest(t)
	bin, err := testenv.BinaryAssetsDirectory()
	if err != nil {
		t.Fatal(err)
	}
	if err := nodes.CheckHost(bin, "/usr/lib/cni"); err != nil {
		t.Fatal(err)
	}
	registry, digests := pushImages(t)

	host := &nodes.Host{}
	t.Cleanup(func() {
		stopping := time.Now()
		if err := host.Close(); err != nil {
			t.Errorf("stopping: %v", err)
		}
		t.Logf("stopped in %s", time.Since(stopping).Round(time.Millisecond))
	})
	network := nodes.DefaultNetwork
	if err := network.Up(host); err != nil {
		t.Fatal(err)
	}
	bind(t, "system:node", rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: "Group", Name: "system:nodes"})
	bind(t, "system:node-proxier", rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: "User", Name: "system:kube-proxy"})
	server := "https://" + net.JoinHostPort(network.HostAddress().String(), apiPort(t))
	dir := t.TempDir()
	for i := range 2 {
		name := fmt.Sprintf("node-%d", i)
		up := time.Now()
		node, err := nodes.Start(t.Context(), host, env.Client, nodes.Options{
			Name: name, Index: i, Network: network,
			Dir: filepath.Join(dir, name), RunDir: fmt.Sprintf("/run/hsnode-%d", i),
			BinDir: bin, CNIBinDir: "/usr/lib/cni",
			Kubeconfig:      kubeconfig(t, server, "system:node:"+name, "system:nodes"),
			ProxyKubeconfig: kubeconfig(t, server, "system:kube-proxy"),
			ClientCA:        env.Config.CAData,
			SandboxImage:    registry.local + "/pause:dev",
			Registries:      map[string]string{registry.local: registry.fromNodes},
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("node %s is Ready at %s, %s after it started", name, node.Address, time.Since(up).Round(time.Millisecond))
		checkNode(t, name, node.Address, network.PodCIDR(i).String())
	}

	ns := env.Namespace(t)
	t.Run("a pod runs the product image, and its log is read through the kubelet", func(t *testing.T) {
		created := time.Now()
		pod := runPod(t, ns, "cli", "node-0", registry.local+"/hypershift:dev", []string{"/usr/bin/hypershift", "version", "--client"}, corev1.PodSucceeded)
		t.Logf("pod created to Succeeded: %s", time.Since(created).Round(time.Millisecond))
		if id := pod.Status.ContainerStatuses[0].ImageID; !strings.HasSuffix(id, "@"+digests["hypershift"]) {
			t.Errorf("imageID %s, want the pushed digest %s", id, digests["hypershift"])
		}
		if log := pods.Log(t, env.Config, pod); !strings.HasPrefix(log, "Client: ") {
			t.Errorf("the container's log through the API server and the kubelet: %q, want the CLI's version", log)
		}
	})
	t.Run("a pod reaches a pod on another node", func(t *testing.T) {
		server := runPod(t, ns, "server", "node-1", registry.local+"/echo:dev", []string{"/usr/bin/echo", "serve", ":8080"}, corev1.PodRunning)
		if !network.PodCIDR(1).Contains(mustAddr(t, server.Status.PodIP)) {
			t.Errorf("the server's address %s is not from node-1's pod subnet %s", server.Status.PodIP, network.PodCIDR(1))
		}
		runPod(t, ns, "client", "node-0", registry.local+"/echo:dev", []string{"/usr/bin/echo", "connect", net.JoinHostPort(server.Status.PodIP, "8080")}, corev1.PodSucceeded)
	})
	t.Run("a pod reaches a Service whose endpoint is on another node, through kube-proxy", func(t *testing.T) {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "echo"},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "server"}, Ports: []corev1.ServicePort{{
				Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP,
			}}},
		}
		if err := env.Client.Create(t.Context(), svc); err != nil {
			t.Fatal(err)
		}
		if !mustPrefix(t, nodes.ServiceRange).Contains(mustAddr(t, svc.Spec.ClusterIP)) {
			t.Fatalf("ClusterIP %s is not from %s", svc.Spec.ClusterIP, nodes.ServiceRange)
		}
		runPod(t, ns, "service-client", "node-0", registry.local+"/echo:dev", []string{"/usr/bin/echo", "connect", net.JoinHostPort(svc.Spec.ClusterIP, "80")}, corev1.PodSucceeded)
	})
}

func mustPrefix(t *testing.T, s string) netip.Prefix {
	t.Helper()
	p, err := netip.ParsePrefix(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// testRegistry is the registry the nodes pull from: at local on the host,
// at fromNodes from the nodes.
type testRegistry struct{ local, fromNodes string }

// pushImages builds static binaries of the pause program, the product and
// the test's echo program, pushes their images, and returns the registry
// and the images' digests by repository.
func pushImages(t *testing.T) (testRegistry, map[string]string) {
	t.Helper()
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+"/", "github.com/hypershift-le/hypershift/hack/images/pause",
		"github.com/hypershift-le/hypershift/cmd/hypershift", "github.com/hypershift-le/hypershift/hypershift-operator",
		"github.com/hypershift-le/hypershift/control-plane-operator", "github.com/hypershift-le/hypershift/test/internal/echo")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	served, err := releasetest.Start("0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = served.Close() })
	_, port, _ := net.SplitHostPort(served.Host())
	r := testRegistry{local: "127.0.0.1:" + port, fromNodes: "http://" + net.JoinHostPort(nodes.DefaultNetwork.HostAddress().String(), port)}
	digests := map[string]string{}
	echo := images.Spec{Programs: []string{"echo"}, Entrypoint: []string{"/usr/bin/echo"}}
	for repo, spec := range map[string]images.Spec{"pause": images.Pause, "hypershift": images.Product, "echo": echo} {
		img, err := images.Build(spec, bin, nil)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := name.ParseReference(r.local + "/" + repo + ":dev")
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(ref, img, remote.WithContext(t.Context())); err != nil {
			t.Fatal(err)
		}
		digest, _ := img.Digest()
		digests[repo] = digest.String()
	}
	return r, digests
}

// checkNode checks what kubectl get nodes -o wide shows of a node.
func checkNode(t *testing.T, name, address, podCIDR string) {
	t.Helper()
	node := &corev1.Node{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, node); err != nil {
		t.Fatal(err)
	}
	info := node.Status.NodeInfo
	if info.KubeletVersion != "v1.37.2" || !strings.HasPrefix(info.ContainerRuntimeVersion, "containerd://") {
		t.Errorf("node %s: kubelet %s, runtime %s", name, info.KubeletVersion, info.ContainerRuntimeVersion)
	}
	internal := ""
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			internal = a.Address
		}
	}
	if internal != address || node.Spec.PodCIDR != podCIDR {
		t.Errorf("node %s: InternalIP %s, pod CIDR %s; want %s and %s", name, internal, node.Spec.PodCIDR, address, podCIDR)
	}
}

// runPod runs a pod of image on node and waits until it is in phase.
func runPod(t *testing.T, ns, name, node, image string, command []string, phase corev1.PodPhase) *corev1.Pod {
	t.Helper()
	return pods.Run(t, env.Client, pods.New(ns, name, node, image, command...), phase)
}

// bind binds the built-in ClusterRole role to subject (the API server
// authorizes with RBAC only).
func bind(t *testing.T, role string, subject rbacv1.Subject) {
	t.Helper()
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "test-" + strings.ReplaceAll(role, ":", "-")},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{subject},
	}
	if err := env.Client.Create(t.Context(), binding); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), binding) })
}

// kubeconfig is a kubeconfig with a client certificate of user in groups,
// reaching the API server at server.
func kubeconfig(t *testing.T, server, user string, groups ...string) []byte {
	t.Helper()
	cfg, err := env.AddUser(user, groups...)
	if err != nil {
		t.Fatal(err)
	}
	data, err := nodes.Kubeconfig(server, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func apiPort(t *testing.T) string {
	t.Helper()
	u, err := url.Parse(env.Config.Host)
	if err != nil || u.Port() == "" {
		t.Fatalf("the API server's address %q: %v", env.Config.Host, err)
	}
	return u.Port()
}

func mustAddr(t *testing.T, s string) netip.Addr {
	t.Helper()
	a, err := netip.ParseAddr(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestNetworkInUse: an address of the nodes' range already on this
// machine stops the network's start, naming it, and changes nothing.
func TestNetworkInUse(t *testing.T) {
	nodes.LockForTest(t)
	if out, err := exec.Command("ip", "link", "add", "hstest0", "type", "veth", "peer", "name", "hstest1").CombinedOutput(); err != nil {
		t.Fatalf("ip link add: %v: %s", err, out)
	}
	defer func() { _ = exec.Command("ip", "link", "del", "hstest0").Run() }()
	if out, err := exec.Command("ip", "addr", "add", "198.19.255.254/32", "dev", "hstest0").CombinedOutput(); err != nil {
		t.Fatalf("ip addr add: %v: %s", err, out)
	}
	host := &nodes.Host{}
	err := nodes.DefaultNetwork.Up(host)
	if cerr := host.Close(); cerr != nil {
		t.Error(cerr)
	}
	if err == nil || !strings.Contains(err.Error(), "198.19.255.254") || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("Up with 198.19.255.254 on hstest0: %v, want a refusal naming it", err)
	}
	t.Log(err)
}

// crashChildEnv, set to a directory, makes the test binary the process of
// TestReapAfterACrash that changes the machine as nodes do, then dies.
const crashChildEnv = "HSNODES_TEST_CRASH_DIR"

// crashWithNodesUp brings the nodes' network up, makes a node's cgroup,
// mounts a tmpfs under dir, starts a process, and dies by SIGKILL: no
// Close, no deferred function, as a killed local cluster ends.
func crashWithNodesUp(dir string) {
	host := &nodes.Host{}
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	if err := nodes.DefaultNetwork.Up(host); err != nil {
		fail(err)
	}
	if err := host.Cgroup("hsnode-crashtest"); err != nil {
		fail(err)
	}
	host.UnmountUnder(dir)
	if out, err := exec.Command("mount", "-t", "tmpfs", "tmpfs", dir).CombinedOutput(); err != nil {
		fail(fmt.Errorf("mount: %w: %s", err, out))
	}
	if err := host.Start(exec.Command("sleep", "600"), time.Second); err != nil {
		fail(err)
	}
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}

// TestReapAfterACrash: a process that dies with its nodes' changes in
// place (network, cgroup, mount, sysctl) leaves them to the next holder of
// the machine's lock, which undoes them all (the lock's check: the machine
// is as it was before the crash).
func TestReapAfterACrash(t *testing.T) {
	nodes.LockForTest(t)
	dir := t.TempDir()
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), crashChildEnv+"="+dir)
	out, err := child.CombinedOutput()
	if child.ProcessState == nil {
		t.Fatalf("the crashing process did not run: %v", err)
	}
	if status, ok := child.ProcessState.Sys().(syscall.WaitStatus); !ok || !status.Signaled() || status.Signal() != syscall.SIGKILL {
		t.Fatalf("the crashing process ended with %v, want SIGKILL: %s", err, out)
	}
	if exec.Command("ip", "link", "show", nodes.DefaultNetwork.Bridge).Run() != nil {
		t.Fatal("the crashed process left no bridge: nothing to reap, the test proves nothing")
	}
	done, err := nodes.Reap()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(done, fmt.Sprintf("process %d left", child.Process.Pid)) {
		t.Errorf("Reap says %q, want the crashed process named", done)
	}
	t.Log(done)
	if again, err := nodes.Reap(); again != "" || err != nil {
		t.Errorf("a second Reap: %q, %v; want nothing left to do", again, err)
	}
}
