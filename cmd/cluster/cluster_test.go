package cluster

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/controllers/hostedcluster"
	"github.com/hypershift-le/hypershift/hypershift-operator/controllers/hostedcluster/hostedclustertest"
	"github.com/hypershift-le/hypershift/support/releaseinfo/releasetest"
	"github.com/hypershift-le/hypershift/support/testutil"
	"github.com/hypershift-le/hypershift/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, testenv.Options{ControllerManager: true}, &env))
}

func pullSecretFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pull-secret.json")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// execute runs a command tree in-process and returns its output.
func execute(ctx context.Context, root func() *cobra.Command, args ...string) (string, error) {
	cmd := root()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	cmd.SetContext(ctx)
	err := cmd.Execute()
	return out.String(), err
}

func TestCreateRenderGolden(t *testing.T) {
	out, err := execute(t.Context(), NewCreateCommand, "cluster", "none", "--name=demo", "--namespace=clusters",
		"--release-image=quay.io/openshift-release-dev/ocp-release:4.17.0-x86_64", "--pull-secret="+pullSecretFile(t, `{"auths":{}}`),
		"--control-plane-availability-policy=HighlyAvailable", "--infra-id=demo-x7k2p", "--cluster-id=0b7d6a6e-4f2b-4c1e-9f7a-3d2c1b0a9e8f",
		"--external-api-server-address=api.demo.example.com", "--node-pool-replicas=2", "--render", "--render-sensitive")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "create-cluster-none.yaml")
	if strings.EqualFold(os.Getenv(testutil.UpdateEnv), "true") {
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("run with UPDATE=true to create the golden file: %v", err)
	}
	if diff := cmp.Diff(string(want), out); diff != "" {
		t.Errorf("rendered objects differ (-golden +got):\n%s", diff)
	}
}

func TestCreateRefusesBadInput(t *testing.T) {
	secret := pullSecretFile(t, `{"auths":{}}`)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "when the name is missing, it is refused", args: []string{"--release-image=quay.io/x/y:1", "--pull-secret=" + secret}, want: "a HostedCluster name is required"},
		{name: "when the NodePool would have fewer than 0 machines, it is refused", args: []string{"--name=a", "--release-image=quay.io/x/y:1", "--pull-secret=" + secret, "--node-pool-replicas=-1", "--render", "--external-api-server-address=a.example.com"}, want: "invalid --node-pool-replicas -1"},
		{name: "when the policy is unknown, it is refused", args: []string{"--name=a", "--release-image=quay.io/x/y:1", "--pull-secret=" + secret, "--control-plane-availability-policy=Triple", "--render"}, want: `invalid --control-plane-availability-policy "Triple"`},
		{name: "when the pull secret file is missing, it is refused", args: []string{"--name=a", "--release-image=quay.io/x/y:1", "--pull-secret=/does/not/exist", "--render", "--external-api-server-address=127.0.0.1"}, want: "failed to read --pull-secret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := execute(t.Context(), NewCreateCommand, append([]string{"cluster", "none"}, tt.args...)...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// startOperator runs the HostedCluster controller in-process as admin, so
// finalizers are handled while the CLI waits.
func startOperator(t *testing.T) {
	t.Helper()
	hostedclustertest.StartOperator(t, env.Config, func(r *hostedcluster.Reconciler) { r.TeardownTimeout = 2 * time.Second })
}

// standInControlPlane acts as the CPO once the HostedControlPlane hcpKey
// exists: it publishes kubeconfig as the admin kubeconfig and reports the
// control plane ready, running the release image it was given.
func standInControlPlane(t *testing.T, hcpKey client.ObjectKey, kubeconfig []byte) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			hcp := &hyperv1.HostedControlPlane{}
			if err := env.Client.Get(t.Context(), hcpKey, hcp); err != nil {
				return err
			}
			secret := &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: hcpKey.Namespace, Name: hyperv1.AdminKubeconfigSecretName,
					Annotations: map[string]string{hyperv1.ClusterAnnotation: hcp.Annotations[hyperv1.ClusterAnnotation]}},
				Data: map[string][]byte{hyperv1.KubeconfigKey: kubeconfig},
			}
			if err := env.Client.Create(t.Context(), secret); err != nil && !apierrors.IsAlreadyExists(err) {
				return err
			}
			hcp.Status.Ready, hcp.Status.Version, hcp.Status.ReleaseImage = true, "4.17.0", hcp.Spec.ReleaseImage
			hcp.Status.KubeConfig = &hyperv1.KubeconfigSecretRef{Name: secret.Name, Key: hyperv1.KubeconfigKey}
			hcp.Status.Conditions = []metav1.Condition{{Type: "Available", Status: "True", Reason: "AsExpected", Message: "ready", LastTransitionTime: metav1.Now()}}
			return env.Client.Status().Update(t.Context(), hcp)
		})
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no HostedControlPlane to report on: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestCreateWaitAndDestroy creates a cluster with --wait while the HO runs
// and a stand-in CPO reports the control plane ready and publishes an admin
// kubeconfig (to the test's API server, standing in for the hosted one):
// --wait returns once a request with that kubeconfig succeeds. The
// kube-apiserver is published at the node's address. Then it destroys the
// cluster with --wait.
func TestCreateWaitAndDestroy(t *testing.T) {
	startOperator(t)
	kubeconfig, err := env.AddUserKubeconfig("cli-admin", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	hostedKubeconfig, err := os.ReadFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cli-node"}}
	if err := env.Client.Create(t.Context(), node); err != nil {
		t.Fatal(err)
	}
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: "cli-node"}, {Type: corev1.NodeInternalIP, Address: "192.0.2.7"}}
	if err := env.Client.Status().Update(t.Context(), node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), node) })
	registry := releasetest.NewRegistry(t)
	image, _ := registry.PushRelease(t, "ocp-release:4.17.0", "4.17.0", map[string]string{"hypershift": registry.Host() + "/hypershift:4.17.0"})
	ns := "clusters-cli"

	type result struct {
		out string
		err error
	}
	created := make(chan result, 1)
	go func() {
		out, err := execute(t.Context(), NewCreateCommand, "cluster", "none", "--kubeconfig="+kubeconfig, "--name=demo", "--namespace="+ns,
			"--release-image="+image, "--pull-secret="+pullSecretFile(t, string(registry.DockerConfigJSON("u", "p"))), "--node-pool-replicas=1", "--wait", "--timeout=60s")
		created <- result{out, err}
	}()

	standInControlPlane(t, client.ObjectKey{Namespace: hyperv1.ControlPlaneNamespace(ns, "demo"), Name: "demo"}, hostedKubeconfig)
	res := <-created
	if res.err != nil {
		t.Fatalf("create --wait failed: %v\n%s", res.err, res.out)
	}
	for _, want := range []string{
		"Publishing the kube-apiserver on a NodePort at 192.0.2.7, the InternalIP of node cli-node",
		"HostedCluster " + ns + "/demo created", "HostedCluster " + ns + "/demo is Available",
		"The hosted cluster's API answers at " + strings.TrimSuffix(env.Config.Host, "/"),
	} {
		if !strings.Contains(res.out, want) {
			t.Errorf("create output lacks %q:\n%s", want, res.out)
		}
	}
	hc := &hyperv1.HostedCluster{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "demo"}, hc); err != nil {
		t.Fatal(err)
	}
	pool := &hyperv1.NodePool{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "demo"}, pool); err != nil {
		t.Fatalf("--node-pool-replicas=1 created no NodePool: %v", err)
	}
	if pool.Spec.ClusterName != "demo" || pool.Spec.Replicas == nil || *pool.Spec.Replicas != 1 || pool.Spec.Release.Image != image {
		t.Errorf("NodePool spec %+v, want 1 machine of the cluster's release", pool.Spec)
	}
	if hc.Spec.Release.Image != image || hc.Spec.PullSecret.Name != "demo-pull-secret" || hc.Spec.InfraID == "" || hc.Spec.ClusterID == "" {
		t.Errorf("the HostedCluster is not as rendered: %+v", hc.Spec)
	}
	if p := hyperv1.APIServerPublishing(hc.Spec.Services); p == nil || p.Type != hyperv1.NodePort || p.NodePort.Address != "192.0.2.7" {
		t.Errorf("the kube-apiserver is not published at the node's address: %+v", hc.Spec.Services)
	}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "demo-pull-secret"}, &corev1.Secret{}); err != nil {
		t.Errorf("the pull secret was not created: %v", err)
	}

	t.Run("when created again, it says the cluster exists", func(t *testing.T) {
		_, err := execute(t.Context(), NewCreateCommand, "cluster", "none", "--kubeconfig="+kubeconfig, "--name=demo", "--namespace="+ns,
			"--release-image="+image, "--pull-secret="+pullSecretFile(t, `{"auths":{}}`))
		if err == nil || !strings.Contains(err.Error(), "already exists: change its release image or pull secret with hypershift update cluster demo -n "+ns) {
			t.Fatalf("got %v", err)
		}
	})

	t.Run("destroy --wait returns once the cluster is gone", func(t *testing.T) {
		out, err := execute(t.Context(), NewDestroyCommand, "cluster", "--kubeconfig="+kubeconfig, "--name=demo", "--namespace="+ns, "--wait", "--timeout=60s")
		if err != nil {
			t.Fatalf("destroy --wait failed: %v\n%s", err, out)
		}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "demo"}, &hyperv1.HostedCluster{}); !apierrors.IsNotFound(err) {
			t.Fatalf("the HostedCluster is still there after destroy --wait returned (%v)\n%s", err, out)
		}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "demo-admin-kubeconfig"}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
			t.Errorf("the admin kubeconfig copy is still there (%v)", err)
		}
		if !strings.Contains(out, "is gone") {
			t.Errorf("destroy output:\n%s", out)
		}
		t.Logf("destroy output:\n%s", out)
	})
}

func TestCreateWaitNamesTheBlocker(t *testing.T) {
	kubeconfig, err := env.AddUserKubeconfig("cli-admin-2", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	out, err := execute(t.Context(), NewCreateCommand, "cluster", "none", "--kubeconfig="+kubeconfig, "--name=lonely", "--namespace=clusters-lonely", "--external-api-server-address=127.0.0.1",
		"--release-image=quay.io/ocp/release:4.17.0", "--pull-secret="+pullSecretFile(t, `{"auths":{}}`), "--wait", "--timeout=3s")
	if err == nil || !strings.Contains(err.Error(), "was not Available within 3s") {
		t.Fatalf("got %v", err)
	}
	if !strings.Contains(out, "no status yet: is the hypershift-operator running?") {
		t.Errorf("the progress does not say what blocks:\n%s", out)
	}
}

// TestCreateRefusesAControlPlaneNamespaceOfAnother checks that create cluster
// refuses, before it creates anything, a cluster whose control-plane
// namespace exists without being its own, or is another HostedCluster's.
func TestCreateRefusesAControlPlaneNamespaceOfAnother(t *testing.T) {
	kubeconfig, err := env.AddUserKubeconfig("cli-claims", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	base := env.Namespace(t)
	if err := env.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: base + "-x"}}); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: base + "-b"}}); err != nil {
		t.Fatal(err)
	}
	other := &hyperv1.HostedCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: base + "-b", Name: "c"},
		Spec: hyperv1.HostedClusterSpec{
			Release:    hyperv1.Release{Image: "quay.io/x/y:1"},
			Platform:   hyperv1.PlatformSpec{Type: hyperv1.NonePlatform},
			PullSecret: hyperv1.LocalObjectReference{Name: "pull-secret"},
			Services:   hyperv1.NodePortServices("127.0.0.1", 0),
		},
	}
	if err := env.Client.Create(t.Context(), other); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, cluster, owner string
	}{
		{name: "when the namespace exists for another purpose, it is refused", cluster: "x"},
		{name: "when another HostedCluster maps to the same namespace, it is refused", cluster: "b-c", owner: base + "-b/c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := execute(t.Context(), NewCreateCommand, "cluster", "none", "--kubeconfig="+kubeconfig, "--name="+tt.cluster, "--namespace="+base,
				"--release-image=quay.io/x/y:1", "--pull-secret="+pullSecretFile(t, `{"auths":{}}`))
			want := hyperv1.ControlPlaneNamespaceConflictMessage(base+"/"+tt.cluster, hyperv1.ControlPlaneNamespace(base, tt.cluster), tt.owner)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("got %v, want an error containing %q", err, want)
			}
			assertNotCreated(t, base, tt.cluster)
		})
	}
}

// TestCreateWaitNeedsAWorkingKubeconfig: a cluster reported Available
// whose admin kubeconfig reaches no API server is not done waiting for, and
// the progress says why.
func TestCreateWaitNeedsAWorkingKubeconfig(t *testing.T) {
	startOperator(t)
	kubeconfig, err := env.AddUserKubeconfig("cli-admin-3", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	registry := releasetest.NewRegistry(t)
	image, _ := registry.PushRelease(t, "ocp-release:4.17.0", "4.17.0", map[string]string{"hypershift": registry.Host() + "/hypershift:4.17.0"})
	ns := "clusters-dead"
	dead := []byte("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n" +
		"contexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\nusers: [{name: u, user: {token: x}}]\n")
	type result struct {
		out string
		err error
	}
	created := make(chan result, 1)
	go func() {
		out, err := execute(t.Context(), NewCreateCommand, "cluster", "none", "--kubeconfig="+kubeconfig, "--name=dead", "--namespace="+ns,
			"--release-image="+image, "--pull-secret="+pullSecretFile(t, string(registry.DockerConfigJSON("u", "p"))),
			"--external-api-server-address=127.0.0.1", "--wait", "--timeout=20s")
		created <- result{out, err}
	}()
	standInControlPlane(t, client.ObjectKey{Namespace: hyperv1.ControlPlaneNamespace(ns, "dead"), Name: "dead"}, dead)
	res := <-created
	if res.err == nil || !strings.Contains(res.err.Error(), "the admin kubeconfig of HostedCluster "+ns+"/dead did not work within 20s") {
		t.Fatalf("create --wait returned %v\n%s", res.err, res.out)
	}
	if !strings.Contains(res.out, "HostedCluster "+ns+"/dead is Available") || !strings.Contains(res.out, "the hosted API at https://127.0.0.1:1 does not answer yet") {
		t.Errorf("the progress does not say what blocks:\n%s", res.out)
	}
}
