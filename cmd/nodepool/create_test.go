package nodepool

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	configv1 "github.com/openshift/api/config/v1"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	npcontroller "github.com/hypershift-le/hypershift/hypershift-operator/controllers/nodepool"
	"github.com/hypershift-le/hypershift/support/releaseinfo"
	"github.com/hypershift-le/hypershift/support/releaseinfo/releasetest"
	"github.com/hypershift-le/hypershift/support/scheme"
	"github.com/hypershift-le/hypershift/support/testutil"
	"github.com/hypershift-le/hypershift/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	os.Exit(testenv.Main(m, testenv.Options{SkipAdmissionPolicies: true}, &env))
}

// execute runs the command in-process and returns its output.
func execute(ctx context.Context, args ...string) (string, error) {
	root := &cobra.Command{Use: "create"}
	root.AddCommand(NewCreateCommand())
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(append([]string{"nodepool"}, args...))
	root.SetContext(ctx)
	err := root.Execute()
	return out.String(), err
}

func TestCreateRenderGolden(t *testing.T) {
	out, err := execute(t.Context(), "none", "workers", "--cluster-name=demo", "--namespace=clusters", "--replicas=3",
		"--release-image=quay.io/openshift-release-dev/ocp-release:4.17.0-x86_64", "--node-labels=role=web", "--render")
	if err != nil {
		t.Fatal(err)
	}
	testutil.CompareBytesWithGolden(t, "create-nodepool-none.yaml", []byte(out))
	out, err = execute(t.Context(), "pod", "workers", "--cluster-name=demo", "--namespace=clusters", "--replicas=3", "--auto-repair", "--node-drain-timeout=5m",
		"--release-image=quay.io/openshift-release-dev/ocp-release:4.17.0-x86_64", "--render")
	if err != nil {
		t.Fatal(err)
	}
	testutil.CompareBytesWithGolden(t, "create-nodepool-pod.yaml", []byte(out))
}

func TestCreateRefusesBadInput(t *testing.T) {
	kubeconfig, err := env.AddUserKubeconfig("nodepool-cli-refusals", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	ns := env.Namespace(t)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"replicas below 0", []string{"workers", "--cluster-name=demo", "--replicas=-1"}, "invalid --replicas -1: a pool has 0 machines or more"},
		{"a name that is no DNS subdomain", []string{"Workers_1", "--cluster-name=demo"}, `invalid NodePool name "Workers_1"`},
		{"render without a release", []string{"workers", "--cluster-name=demo", "--render"}, "--render needs --release-image"},
		{"render and write", []string{"workers", "--cluster-name=demo", "--render", "--release-image=r", "--output-dir=x"}, "--render prints the NodePool and creates nothing"},
		{"a cluster that does not exist", []string{"workers", "--cluster-name=nowhere", "-n", ns, "--kubeconfig=" + kubeconfig},
			"HostedCluster " + ns + "/nowhere does not exist: create it first (hypershift create cluster none nowhere -n " + ns + ")"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := execute(t.Context(), append([]string{"none"}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q\n%s", err, tc.want, out)
			}
		})
	}
	t.Run("a pool of platform Pod for a cluster of platform None", func(t *testing.T) {
		if err := env.Client.Create(t.Context(), &hyperv1.HostedCluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "demo"},
			Spec: hyperv1.HostedClusterSpec{
				Release: hyperv1.Release{Image: "quay.io/openshift-release-dev/ocp-release:4.17.0-x86_64"}, Platform: hyperv1.PlatformSpec{Type: hyperv1.NonePlatform},
				PullSecret: hyperv1.LocalObjectReference{Name: "pull-secret"}, Services: hyperv1.NodePortServices("198.18.0.11", 0),
			},
		}); err != nil {
			t.Fatal(err)
		}
		out, err := execute(t.Context(), "pod", "workers", "--cluster-name=demo", "-n", ns, "--kubeconfig="+kubeconfig)
		want := "HostedCluster " + ns + "/demo is of platform None, which runs no machines: create a pool of platform None (hypershift create nodepool none), or a HostedCluster of platform Pod (hypershift create cluster pod)"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want %q\n%s", err, want, out)
		}
	})
	pools := &hyperv1.NodePoolList{}
	if err := env.Client.List(t.Context(), pools, client.InNamespace(ns)); err != nil || len(pools.Items) != 0 {
		t.Errorf("refused input left NodePools %v (%v)", pools.Items, err)
	}
}

// TestCreateWritesJoinMaterial creates a pool for an existing HostedCluster
// while the hypershift-operator's NodePool controller runs, and writes
// what its machines join with: the pool takes the cluster's release, the
// files are what the join Secret holds, the credential readable by the
// user alone.
func TestCreateWritesJoinMaterial(t *testing.T) {
	kubeconfig, err := env.AddUserKubeconfig("nodepool-cli", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	ns := env.Namespace(t)
	releases := startWithCluster(t, ns, "4.17.0")
	release := releases[0]
	// What the hypershift-operator has by then: the control-plane
	// namespace and the admin kubeconfig's copy.
	cpNamespace := hyperv1.ControlPlaneNamespace(ns, "demo")
	if err := env.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cpNamespace}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cpNamespace}})
	})
	ca := []byte("-----BEGIN CERTIFICATE-----\nroot\n-----END CERTIFICATE-----\n")
	admin := clientcmdapi.NewConfig()
	admin.Clusters["demo"] = &clientcmdapi.Cluster{Server: "https://198.18.0.11:31443", CertificateAuthorityData: ca}
	admin.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: "admin"}
	admin.Contexts["admin"] = &clientcmdapi.Context{Cluster: "demo", AuthInfo: "admin"}
	admin.CurrentContext = "admin"
	raw, err := clientcmd.Write(*admin)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: hyperv1.AdminKubeconfigName("demo")},
		Data:       map[string][]byte{hyperv1.KubeconfigKey: raw},
	}); err != nil {
		t.Fatal(err)
	}

	dir := filepath.Join(t.TempDir(), "join")
	out, err := execute(t.Context(), "none", "workers", "--cluster-name=demo", "-n", ns, "--replicas=2", "--output-dir="+dir, "--timeout=30s", "--kubeconfig="+kubeconfig)
	if err != nil {
		t.Fatalf("create nodepool: %v\n%s", err, out)
	}
	for _, want := range []string{"NodePool " + ns + "/workers created for HostedCluster demo (2 machines, release " + release + ")", "Wrote " + filepath.Join(dir, "bootstrap.kubeconfig"), "kubelet --bootstrap-kubeconfig="} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	np := &hyperv1.NodePool{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "workers"}, np); err != nil {
		t.Fatal(err)
	}
	if np.Spec.Release.Image != release || np.Spec.Replicas == nil || *np.Spec.Replicas != 2 || np.Spec.ClusterName != "demo" {
		t.Errorf("the NodePool's spec %+v, want the cluster's release and 2 replicas", np.Spec)
	}
	secret := &corev1.Secret{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: hyperv1.NodePoolJoinSecretName("workers")}, secret); err != nil {
		t.Fatal(err)
	}
	for _, f := range JoinFiles {
		path := filepath.Join(dir, f.Path)
		got, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%s: %v", f.Path, err)
			continue
		}
		if !bytes.Equal(got, secret.Data[f.Key]) || len(got) == 0 {
			t.Errorf("%s holds %q, want the join Secret's %s", f.Path, got, f.Key)
		}
		if info, err := os.Stat(path); err != nil || info.Mode().Perm() != f.Mode {
			t.Errorf("%s: mode %v (%v), want %v", f.Path, info.Mode().Perm(), err, f.Mode)
		}
	}
	loaded, err := clientcmd.LoadFromFile(filepath.Join(dir, "bootstrap.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	if auth := loaded.AuthInfos[loaded.Contexts[loaded.CurrentContext].AuthInfo]; auth == nil || auth.Token == "" || auth.ClientCertificateData != nil {
		t.Errorf("the bootstrap kubeconfig's credential %+v, want the bootstrap token alone", auth)
	}

	if out, err := execute(t.Context(), "none", "workers", "--cluster-name=demo", "-n", ns, "--kubeconfig="+kubeconfig); err == nil ||
		!strings.Contains(err.Error(), "NodePool "+ns+"/workers already exists: scale it with kubectl scale np workers") {
		t.Errorf("a second create: %v, want it refused\n%s", err, out)
	}
}

// startWithCluster serves a release payload of each version, with the
// pull secret that reads them in ns, runs the NodePool controller, and
// creates HostedCluster demo in ns of the first payload; it returns the
// payloads' pull specs, in order.
func startWithCluster(t *testing.T, ns string, versions ...string) []string {
	t.Helper()
	registry := releasetest.NewRegistry(t)
	var releases []string
	for _, version := range versions {
		image, _ := registry.PushRelease(t, "ocp-release:"+version, version, map[string]string{"hypershift": registry.Host() + "/hypershift:" + version})
		releases = append(releases, image)
	}
	if err := env.Client.Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pull-secret"},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: registry.DockerConfigJSON("u", "p")},
	}); err != nil {
		t.Fatal(err)
	}
	startNodePoolController(t, releaseinfo.NewRegistryProvider(releaseinfo.WithInsecureRegistries(registry.Host())))
	hc := &hyperv1.HostedCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "demo"},
		Spec: hyperv1.HostedClusterSpec{
			Release: hyperv1.Release{Image: releases[0]}, Platform: hyperv1.PlatformSpec{Type: hyperv1.NonePlatform},
			PullSecret: hyperv1.LocalObjectReference{Name: "pull-secret"}, Services: hyperv1.NodePortServices("198.18.0.11", 0),
		},
	}
	if err := env.Client.Create(t.Context(), hc); err != nil {
		t.Fatal(err)
	}
	return releases
}

// startNodePoolController runs the hypershift-operator's NodePool
// controller until the test ends.
func startNodePoolController(t *testing.T, releases releaseinfo.Provider) {
	t.Helper()
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme: scheme.New(), Metrics: metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}, // one per test
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := (&npcontroller.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Releases: releases}).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("the NodePool controller: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("the NodePool controller did not stop")
		}
	})
}

// TestCreateRefusesANewerRelease gives a pool a release newer than its
// cluster's: the operator judges it, the command refuses it and deletes
// the pool again, leaving nothing.
func TestCreateRefusesANewerRelease(t *testing.T) {
	kubeconfig, err := env.AddUserKubeconfig("nodepool-cli-newer", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	ns := env.Namespace(t)
	releases := startWithCluster(t, ns, "4.17.0", "4.18.0")
	current, newer := releases[0], releases[1]
	hc := &hyperv1.HostedCluster{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "demo"}, hc); err != nil {
		t.Fatal(err)
	}
	hc.Status.Version = &hyperv1.ClusterVersionStatus{Desired: configv1.Release{Version: "4.17.0", Image: current}}
	if err := env.Client.Status().Update(t.Context(), hc); err != nil {
		t.Fatal(err)
	}
	out, err := execute(t.Context(), "none", "workers", "--cluster-name=demo", "-n", ns, "--release-image="+newer, "--kubeconfig="+kubeconfig)
	if want := "NodePool version 4.18.0 is newer than HostedCluster version 4.17.0"; err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "the NodePool was deleted again") {
		t.Fatalf("create with a newer release: %v, want it refused saying %q\n%s", err, want, out)
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		pools := &hyperv1.NodePoolList{}
		if err := env.Client.List(t.Context(), pools, client.InNamespace(ns)); err != nil {
			return err
		}
		if len(pools.Items) != 0 {
			return fmt.Errorf("the refused pool is still there: %+v", pools.Items[0].ObjectMeta)
		}
		return nil
	})
}
