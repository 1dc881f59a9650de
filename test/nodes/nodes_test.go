package nodes_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hypershift-le/hypershift/hack/images"
	"github.com/hypershift-le/hypershift/support/releaseinfo/releasetest"
	"github.com/hypershift-le/hypershift/support/testutil"
	"github.com/hypershift-le/hypershift/test/nodes"
	"github.com/hypershift-le/hypershift/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, testenv.Options{
		SkipAdmissionPolicies: true,
		BindAddress:           "0.0.0.0",
		ServingIPs:            []string{nodes.DefaultNetwork.HostAddress().String()},
	}, &env))
}

// TestANodeRunsOurImages brings a real node up (its own network
// namespace, containerd and kubelet), joined to the API server with a
// client certificate, and runs a pod of the product image pulled from a
// registry by the kubelet: the container runs the CLI for real and the
// pod's imageID carries the pushed digest. Stopping leaves the host as it
// was.
func TestANodeRunsOurImages(t *testing.T) {
	before := nodes.Snapshot()
	bin, err := testenv.BinaryAssetsDirectory()
	if err != nil {
		t.Fatal(err)
	}
	if err := nodes.CheckHost(bin, "/usr/lib/cni"); err != nil {
		t.Fatal(err)
	}
	staticBin := t.TempDir()
	build := exec.Command("go", "build", "-o", staticBin+"/", "github.com/hypershift-le/hypershift/hack/images/pause",
		"github.com/hypershift-le/hypershift/cmd/hypershift",
		"github.com/hypershift-le/hypershift/hypershift-operator", "github.com/hypershift-le/hypershift/control-plane-operator")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	registry, err := releasetest.Start("0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = registry.Close() })
	_, port, _ := net.SplitHostPort(registry.Host())
	local := "127.0.0.1:" + port
	digests := map[string]string{}
	for repo, spec := range map[string]images.Spec{"pause": images.Pause, "hypershift": images.Product} {
		img, err := images.Build(spec, staticBin, nil)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := name.ParseReference(local + "/" + repo + ":dev")
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(ref, img, remote.WithContext(t.Context())); err != nil {
			t.Fatal(err)
		}
		digest, _ := img.Digest()
		digests[repo] = digest.String()
	}

	host := &nodes.Host{}
	t.Cleanup(func() {
		stopping := time.Now()
		defer func() { t.Logf("stopped in %s", time.Since(stopping).Round(time.Millisecond)) }()
		if err := host.Close(); err != nil {
			t.Errorf("stopping: %v", err)
		}
		if diff := nodes.Snapshot().Diff(before); diff != "" {
			t.Errorf("the host is not as it was before the node started:\n%s", diff)
		}
	})
	network := nodes.DefaultNetwork
	if err := network.Up(host); err != nil {
		t.Fatal(err)
	}
	up := time.Now()
	bindNodes(t)
	dir := t.TempDir()
	node, err := nodes.Start(t.Context(), host, env.Client, nodes.Options{
		Name: "node-0", Index: 0, Network: network,
		Dir: filepath.Join(dir, "node-0"), RunDir: "/run/hsnode-0",
		BinDir: bin, CNIBinDir: "/usr/lib/cni",
		Kubeconfig:   nodeKubeconfig(t, "node-0", "https://"+network.HostAddress().String()+":"+apiPort(t)),
		ClientCA:     env.Config.CAData,
		SandboxImage: local + "/pause:dev",
		Registries:   map[string]string{local: "http://" + network.HostAddress().String() + ":" + port},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("node node-0 is Ready at %s, %s after its network was up", node.Address, time.Since(up).Round(time.Millisecond))

	ns := env.Namespace(t)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cli"},
		Spec: corev1.PodSpec{
			NodeName:      "node-0",
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "cli", Image: local + "/hypershift:dev", Command: []string{"/usr/bin/hypershift", "version", "--client"},
				SecurityContext: &corev1.SecurityContext{RunAsNonRoot: ptr.To(true), AllowPrivilegeEscalation: ptr.To(false),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}, SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			}},
		},
	}
	if err := env.Client.Create(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	created := time.Now()
	defer func() { t.Logf("pod created to Succeeded: %s", time.Since(created).Round(time.Millisecond)) }()
	testutil.Eventually(t, 90*time.Second, func() error {
		got := &corev1.Pod{}
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(pod), got); err != nil {
			return err
		}
		if got.Status.Phase != corev1.PodSucceeded {
			return fmt.Errorf("pod %s: %s %+v", got.Name, got.Status.Phase, got.Status.ContainerStatuses)
		}
		status := got.Status.ContainerStatuses[0]
		if !strings.HasSuffix(status.ImageID, "@"+digests["hypershift"]) {
			return fmt.Errorf("imageID %s, want the pushed digest %s", status.ImageID, digests["hypershift"])
		}
		return nil
	})
}

// bindNodes grants nodes the system:node role (the API server authorizes
// with RBAC only).
func bindNodes(t *testing.T) {
	t.Helper()
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "test-nodes"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:node"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "Group", Name: "system:nodes"}},
	}
	if err := env.Client.Create(t.Context(), binding); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), binding) })
}

// nodeKubeconfig is a kubeconfig for node name's kubelet with a client
// certificate of system:node:<name>, reaching the API server at server.
func nodeKubeconfig(t *testing.T, name, server string) []byte {
	t.Helper()
	cfg, err := env.AddUser("system:node:"+name, "system:nodes")
	if err != nil {
		t.Fatal(err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	kc.CurrentContext = "c"
	data, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func apiPort(t *testing.T) string {
	t.Helper()
	_, port, err := net.SplitHostPort(strings.TrimPrefix(env.Config.Host, "https://"))
	if err != nil {
		t.Fatal(err)
	}
	return port
}
