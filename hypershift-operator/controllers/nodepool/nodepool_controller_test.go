package nodepool

import (
	"context"
	"maps"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/leaderelection"
	"github.com/hypershift-le/hypershift/support/releaseinfo"
	"github.com/hypershift-le/hypershift/support/releaseinfo/releasetest"
	"github.com/hypershift-le/hypershift/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	os.Exit(testenv.Main(m, testenv.Options{SkipAdmissionPolicies: true, AuditLog: true}, &env))
}

// TestNodePoolJoinMaterial follows one NodePool of platform None: refused
// while its HostedCluster does not exist; then given a bootstrap token in
// the control-plane namespace and a join Secret beside it that reaches the
// hosted kube-apiserver with that token; a new token once half the old
// one's life has passed; the token deleted with the pool.
func TestNodePoolJoinMaterial(t *testing.T) {
	ns := env.Namespace(t)
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	registry, releases := pushRelease(t, ns, "4.17.0", "4.17.1")
	release, next := releases[0], releases[1]
	r := &Reconciler{Client: env.Client, APIReader: env.Client, Releases: registry, Now: func() time.Time { return now }}
	np := &hyperv1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "workers"},
		Spec: hyperv1.NodePoolSpec{
			ClusterName: "demo",
			Release:     hyperv1.Release{Image: release},
			Platform:    hyperv1.NodePoolPlatform{Type: hyperv1.NonePlatform},
			Management:  hyperv1.NodePoolManagement{UpgradeType: hyperv1.UpgradeTypeReplace},
		},
	}
	if err := env.Client.Create(t.Context(), np); err != nil {
		t.Fatal(err)
	}
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(np)}
	reconcile := func() ctrl.Result {
		t.Helper()
		res, err := r.Reconcile(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	reconcile()
	c := condition(t, np, hyperv1.ValidHostedCluster)
	if c.Status != metav1.ConditionFalse || c.Reason != HostedClusterNotFoundReason ||
		!strings.Contains(c.Message, "HostedCluster "+ns+"/demo does not exist: create it (hypershift create cluster none demo -n "+ns+")") {
		t.Fatalf("ValidHostedCluster %+v", c)
	}

	hc := &hyperv1.HostedCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "demo"},
		Spec: hyperv1.HostedClusterSpec{
			Release:    hyperv1.Release{Image: "quay.io/openshift-release-dev/ocp-release:4.17.0-x86_64"},
			Platform:   hyperv1.PlatformSpec{Type: hyperv1.NonePlatform},
			PullSecret: hyperv1.LocalObjectReference{Name: "pull-secret"},
			Services:   hyperv1.NodePortServices("198.18.0.11", 0),
		},
	}
	if err := env.Client.Create(t.Context(), hc); err != nil {
		t.Fatal(err)
	}
	reconcile()
	if c := condition(t, np, hyperv1.Ready); c.Status != metav1.ConditionFalse || c.Reason != WaitingForControlPlaneReason {
		t.Fatalf("Ready without a control-plane namespace: %+v", c)
	}
	cpNamespace := hyperv1.ControlPlaneNamespace(ns, "demo")
	if err := env.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cpNamespace}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cpNamespace}})
	})
	reconcile()
	first := token(t, cpNamespace)
	if c := condition(t, np, hyperv1.Ready); c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "no admin kubeconfig") {
		t.Fatalf("Ready without the admin kubeconfig: %+v", c)
	}

	// The test's API server stands in for the hosted one: the pool's nodes
	// are counted there.
	adminPath, err := env.AddUserKubeconfig("nodepool-hosted-admin", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(adminPath)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := clientcmd.Load(raw)
	if err != nil {
		t.Fatal(err)
	}
	hostedServer := admin.Clusters[admin.Contexts[admin.CurrentContext].Cluster].Server
	ca := admin.Clusters[admin.Contexts[admin.CurrentContext].Cluster].CertificateAuthorityData
	if err := env.Client.Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: hyperv1.AdminKubeconfigName("demo")},
		Data:       map[string][]byte{hyperv1.KubeconfigKey: raw},
	}); err != nil {
		t.Fatal(err)
	}
	res := reconcile()
	if np.Status.Version != "4.17.0" {
		t.Errorf("status.version %q, want the release's 4.17.0", np.Status.Version)
	}
	if want := NodesPollReady; res.RequeueAfter != want {
		t.Errorf("requeue after %s, want the nodes counted again in %s (before the rotation)", res.RequeueAfter, want)
	}
	if c := condition(t, np, hyperv1.Ready); c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, ns+"/workers-join") {
		t.Fatalf("Ready: %+v", c)
	}
	if again := token(t, cpNamespace); again != first {
		t.Fatalf("the token changed from %s to %s before its rotation", first, again)
	}
	assertJoin(t, ns, first, ca, hostedServer)

	outer := t // the nodes outlive each subtest
	t.Run("the pool's nodes are counted in the hosted cluster", func(t *testing.T) {
		patch := client.MergeFrom(np.DeepCopy())
		np.Spec.Replicas = ptr.To(int32(2))
		if err := env.Client.Patch(t.Context(), np, patch); err != nil {
			t.Fatal(err)
		}
		node(outer, "workers-a", "workers", corev1.ConditionTrue)
		b := node(outer, "workers-b", "workers", corev1.ConditionFalse)
		node(outer, "other-a", "other", corev1.ConditionTrue)
		if res := reconcile(); res.RequeueAfter != NodesPollWaiting {
			t.Errorf("requeue after %s while waiting for nodes, want %s", res.RequeueAfter, NodesPollWaiting)
		}
		if c := condition(t, np, hyperv1.Ready); c.Status != metav1.ConditionFalse || c.Reason != WaitingForNodesReason || !strings.Contains(c.Message, "1 of 2 nodes joined and ready") {
			t.Errorf("Ready with a node not ready: %+v", c)
		}
		if np.Status.Replicas != 2 {
			t.Errorf("status.replicas %d, want the pool's 2 nodes (not the other pool's)", np.Status.Replicas)
		}
		if c := condition(t, np, hyperv1.AllNodesHealthy); c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "workers-b (KubeletNotReady") {
			t.Errorf("AllNodesHealthy with a node not ready: %+v", c)
		}
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(b), b); err != nil {
			t.Fatal(err)
		}
		b.Status.Conditions[0].Status, b.Status.Conditions[0].Reason = corev1.ConditionTrue, "KubeletReady"
		if err := env.Client.Status().Update(t.Context(), b); err != nil {
			t.Fatal(err)
		}
		reconcile()
		if c := condition(t, np, hyperv1.Ready); c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "2 of 2 nodes ready") {
			t.Errorf("Ready with both nodes ready: %+v", c)
		}
		if c := condition(t, np, hyperv1.AllNodesHealthy); c.Status != metav1.ConditionTrue {
			t.Errorf("AllNodesHealthy with both nodes ready: %+v", c)
		}
	})

	t.Run("the pool's labels and taints reach its nodes in place, and go when the pool drops them", func(t *testing.T) {
		// What others set stays: the kubelet's label, the node
		// controller's taint.
		a := &corev1.Node{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Name: "workers-a"}, a); err != nil {
			t.Fatal(err)
		}
		a.Labels["kubernetes.io/hostname"] = "workers-a"
		a.Spec.Taints = []corev1.Taint{{Key: "node.kubernetes.io/unreachable", Effect: corev1.TaintEffectNoExecute}}
		if err := env.Client.Update(t.Context(), a); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(np.DeepCopy())
		np.Spec.NodeLabels = map[string]string{"role": "web", "tier": "front"}
		np.Spec.Taints = []hyperv1.Taint{{Key: "dedicated", Value: "web", Effect: corev1.TaintEffectNoSchedule}}
		if err := env.Client.Patch(t.Context(), np, patch); err != nil {
			t.Fatal(err)
		}
		reconcile()
		assertNode(t, "workers-a", map[string]string{"role": "web", "tier": "front", "kubernetes.io/hostname": "workers-a", hyperv1.NodePoolLabel: "workers"},
			[]string{"dedicated=web:NoSchedule", "node.kubernetes.io/unreachable=:NoExecute"})
		// (The API server taints a new Node not-ready until its kubelet
		// says otherwise: another's taint, which stays.)
		assertNode(t, "workers-b", map[string]string{"role": "web", "tier": "front", hyperv1.NodePoolLabel: "workers"},
			[]string{"dedicated=web:NoSchedule", "node.kubernetes.io/not-ready=:NoSchedule"})
		assertNode(t, "other-a", map[string]string{hyperv1.NodePoolLabel: "other"}, []string{"node.kubernetes.io/not-ready=:NoSchedule"})

		patch = client.MergeFrom(np.DeepCopy())
		np.Spec.NodeLabels = map[string]string{"role": "api"}
		np.Spec.Taints = nil
		if err := env.Client.Patch(t.Context(), np, patch); err != nil {
			t.Fatal(err)
		}
		reconcile()
		assertNode(t, "workers-a", map[string]string{"role": "api", "kubernetes.io/hostname": "workers-a", hyperv1.NodePoolLabel: "workers"},
			[]string{"node.kubernetes.io/unreachable=:NoExecute"})
		before := &corev1.Node{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Name: "workers-a"}, before); err != nil {
			t.Fatal(err)
		}
		reconcile()
		after := &corev1.Node{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Name: "workers-a"}, after); err != nil {
			t.Fatal(err)
		}
		if after.ResourceVersion != before.ResourceVersion {
			t.Errorf("a pass with nothing to change wrote the node (resourceVersion %s -> %s)", before.ResourceVersion, after.ResourceVersion)
		}
	})

	now = now.Add(TokenTTL/2 + time.Minute)
	reconcile()
	second := token(t, cpNamespace)
	if second == first || strings.Split(second, ".")[0] == strings.Split(first, ".")[0] {
		t.Fatalf("no new token after half the old one's life: %s, then %s", first, second)
	}
	assertJoin(t, ns, second, ca, hostedServer)

	// A new release is a new config: a new token at once, long before
	// its rotation is due (the control-plane-operator revokes the old).
	patch := client.MergeFrom(np.DeepCopy())
	np.Spec.Release.Image = next
	if err := env.Client.Patch(t.Context(), np, patch); err != nil {
		t.Fatal(err)
	}
	secondConfig := tokenConfig(t, cpNamespace)
	reconcile()
	third := token(t, cpNamespace)
	if strings.Split(third, ".")[0] == strings.Split(second, ".")[0] || tokenConfig(t, cpNamespace) == secondConfig {
		t.Fatalf("the pool's release changed, and its token (%s) and config (%s) did not", third, secondConfig)
	}
	assertJoin(t, ns, third, ca, hostedServer)

	if err := env.Client.Delete(t.Context(), np); err != nil {
		t.Fatal(err)
	}
	reconcile()
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: cpNamespace, Name: hyperv1.NodePoolTokenSecretName("workers")}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Errorf("the token Secret after the NodePool's deletion: %v, want NotFound", err)
	}
	if err := env.Client.Get(t.Context(), req.NamespacedName, &hyperv1.NodePool{}); !apierrors.IsNotFound(err) {
		t.Errorf("the NodePool after its deletion: %v, want it gone", err)
	}
}

// condition reads np again and returns its condition conditionType.
func condition(t *testing.T, np *hyperv1.NodePool, conditionType string) metav1.Condition {
	t.Helper()
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(np), np); err != nil {
		t.Fatal(err)
	}
	c := meta.FindStatusCondition(np.Status.Conditions, conditionType)
	if c == nil {
		t.Fatalf("no %s condition in %+v", conditionType, np.Status.Conditions)
	}
	return *c
}

// tokenConfig is the config the pool's current token is for.
func tokenConfig(t *testing.T, cpNamespace string) string {
	t.Helper()
	s := &corev1.Secret{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: cpNamespace, Name: hyperv1.NodePoolTokenSecretName("workers")}, s); err != nil {
		t.Fatal(err)
	}
	if s.Annotations[hyperv1.NodePoolConfigAnnotation] == "" {
		t.Fatalf("token Secret names no config: %v", s.Annotations)
	}
	return s.Annotations[hyperv1.NodePoolConfigAnnotation]
}

// token is the pool's current token, id.secret, with its Secret's labels
// checked.
func token(t *testing.T, cpNamespace string) string {
	t.Helper()
	s := &corev1.Secret{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: cpNamespace, Name: hyperv1.NodePoolTokenSecretName("workers")}, s); err != nil {
		t.Fatal(err)
	}
	if s.Labels[hyperv1.NodePoolLabel] != "workers" {
		t.Errorf("token Secret labels %v", s.Labels)
	}
	if _, err := time.Parse(time.RFC3339, string(s.Data["expiration"])); err != nil {
		t.Errorf("token expiration %q: %v", s.Data["expiration"], err)
	}
	return string(s.Data["token-id"]) + "." + string(s.Data["token-secret"])
}

// assertJoin fails unless the join Secret reaches the hosted API with token
// and holds the CA.
func assertJoin(t *testing.T, ns, token string, ca []byte, server string) {
	t.Helper()
	s := &corev1.Secret{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: hyperv1.NodePoolJoinSecretName("workers")}, s); err != nil {
		t.Fatal(err)
	}
	kc, err := clientcmd.Load(s.Data[hyperv1.BootstrapKubeconfigKey])
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.NewDefaultClientConfig(*kc, nil).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != server || cfg.BearerToken != token || string(cfg.CAData) != string(ca) || string(s.Data[hyperv1.CACertKey]) != string(ca) {
		t.Errorf("join Secret: server %s token %s CA %q, want the endpoint, token %s and the CA", cfg.Host, cfg.BearerToken, cfg.CAData, token)
	}
	// The kubelet's drop-in gives pods the hosted cluster's DNS address:
	// the tenth of its (defaulted) Service network, 172.31.0.0/16.
	var kubelet struct {
		Kind               string   `json:"kind"`
		ClusterDNS         []string `json:"clusterDNS"`
		ClusterDomain      string   `json:"clusterDomain"`
		ServerTLSBootstrap bool     `json:"serverTLSBootstrap"`
		Authentication     struct {
			Anonymous struct {
				Enabled *bool `json:"enabled"`
			} `json:"anonymous"`
		} `json:"authentication"`
	}
	if err := yaml.Unmarshal(s.Data[hyperv1.KubeletConfigKey], &kubelet); err != nil {
		t.Fatalf("the join Secret's kubelet configuration: %v\n%s", err, s.Data[hyperv1.KubeletConfigKey])
	}
	if kubelet.Kind != "KubeletConfiguration" || len(kubelet.ClusterDNS) != 1 || kubelet.ClusterDNS[0] != "172.31.0.10" || kubelet.ClusterDomain != "cluster.local" ||
		!kubelet.ServerTLSBootstrap || kubelet.Authentication.Anonymous.Enabled == nil || *kubelet.Authentication.Anonymous.Enabled {
		t.Errorf("the join Secret's kubelet configuration %+v:\n%s", kubelet, s.Data[hyperv1.KubeletConfigKey])
	}
	if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].Kind != "NodePool" || s.OwnerReferences[0].Name != "workers" {
		t.Errorf("join Secret owners %+v, want the NodePool", s.OwnerReferences)
	}
}

// pushRelease serves a release payload of each version and the pull
// secret "pull-secret" in ns that reads them; it returns a provider of the
// registry and the payloads' pull specs, in order.
func pushRelease(t *testing.T, ns string, versions ...string) (releaseinfo.Provider, []string) {
	t.Helper()
	registry := releasetest.NewRegistry(t)
	var images []string
	for _, version := range versions {
		image, _ := registry.PushRelease(t, "ocp-release:"+version, version, map[string]string{"hypershift": registry.Host() + "/hypershift:" + version})
		images = append(images, image)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pull-secret"},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: registry.DockerConfigJSON("u", "p")},
	}
	if err := env.Client.Create(t.Context(), secret); err != nil {
		t.Fatal(err)
	}
	return releaseinfo.NewRegistryProvider(releaseinfo.WithInsecureRegistries(registry.Host())), images
}

// TestNodePoolRelease refuses a pool whose release cannot be read, or is
// newer than its cluster's, with a condition that says why and nothing
// published: no token, no join Secret.
func TestNodePoolRelease(t *testing.T) {
	ns := env.Namespace(t)
	provider, releases := pushRelease(t, ns, "4.18.0")
	newer := releases[0]
	r := &Reconciler{Client: env.Client, APIReader: env.Client, Releases: provider}
	hc := createCluster(t, ns, newer)
	hc.Status.Version = &hyperv1.ClusterVersionStatus{Desired: configv1.Release{Version: "4.17.0"}}
	if err := env.Client.Status().Update(t.Context(), hc); err != nil {
		t.Fatal(err)
	}
	cpNamespace := hyperv1.ControlPlaneNamespace(ns, "demo")
	if err := env.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cpNamespace}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cpNamespace}})
	})
	for _, tc := range []struct {
		name, image, condition, reason, message string
	}{
		{"a release that does not exist", strings.Replace(newer, "4.18.0", "4.18.0-typo", 1), hyperv1.ValidReleaseImage, hyperv1.ReleaseImageNotFoundReason, "Failed to read release image"},
		{"a release newer than the cluster's", newer, hyperv1.SupportedVersionSkew, NodePoolNewerReason, "NodePool version 4.18.0 is newer than HostedCluster version 4.17.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := strings.ReplaceAll(tc.name, " ", "-")[:12]
			np := &hyperv1.NodePool{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec: hyperv1.NodePoolSpec{
					ClusterName: "demo", Release: hyperv1.Release{Image: tc.image},
					Platform:   hyperv1.NodePoolPlatform{Type: hyperv1.NonePlatform},
					Management: hyperv1.NodePoolManagement{UpgradeType: hyperv1.UpgradeTypeReplace},
				},
			}
			if err := env.Client.Create(t.Context(), np); err != nil {
				t.Fatal(err)
			}
			if _, err := r.Reconcile(t.Context(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(np)}); err != nil {
				t.Fatal(err)
			}
			c := condition(t, np, tc.condition)
			if c.Status != metav1.ConditionFalse || c.Reason != tc.reason || !strings.Contains(c.Message, tc.message) {
				t.Errorf("%s: %+v, want False (%s) saying %q", tc.condition, c, tc.reason, tc.message)
			}
			if ready := condition(t, np, hyperv1.Ready); ready.Status != metav1.ConditionFalse || ready.Reason != tc.reason {
				t.Errorf("Ready: %+v, want False for the same reason", ready)
			}
			if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: cpNamespace, Name: hyperv1.NodePoolTokenSecretName(name)}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
				t.Errorf("a token for a pool that cannot run its release: %v", err)
			}
		})
	}
}

func TestSkew(t *testing.T) {
	for _, tc := range []struct {
		pool, cluster string
		want          metav1.ConditionStatus
	}{
		{"4.17.0", "4.17.0", metav1.ConditionTrue},
		{"4.17.0", "4.17.3", metav1.ConditionTrue},
		{"4.14.2", "4.17.0", metav1.ConditionTrue},
		{"4.13.9", "4.17.0", metav1.ConditionFalse},
		{"4.17.1", "4.17.0", metav1.ConditionFalse},
		{"4.18.0", "4.17.0", metav1.ConditionFalse},
		{"5.0.0", "4.17.0", metav1.ConditionFalse},
		{"4.17.0", "", metav1.ConditionUnknown},
	} {
		var cluster *hyperv1.ClusterVersionStatus
		if tc.cluster != "" {
			cluster = &hyperv1.ClusterVersionStatus{Desired: configv1.Release{Version: tc.cluster}}
		}
		if got, reason, message := skew(tc.pool, cluster); got != tc.want {
			t.Errorf("pool %s, cluster %s: %s (%s: %s), want %s", tc.pool, tc.cluster, got, reason, message, tc.want)
		}
	}
}

// node registers Node name of NodePool pool, its Ready condition ready.
func node(t *testing.T, name, pool string, ready corev1.ConditionStatus) *corev1.Node {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{hyperv1.NodePoolLabel: pool}}}
	if err := env.Client.Create(t.Context(), n); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), n) })
	reason := "KubeletReady"
	if ready != corev1.ConditionTrue {
		reason = "KubeletNotReady"
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready, Reason: reason, Message: "as the kubelet says", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	if err := env.Client.Status().Update(t.Context(), n); err != nil {
		t.Fatal(err)
	}
	return n
}

// assertNode fails unless Node name has exactly labels and taints
// (key=value:effect, in any order).
func assertNode(t *testing.T, name string, labels map[string]string, taints []string) {
	t.Helper()
	n := &corev1.Node{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, n); err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(n.Labels, labels) {
		t.Errorf("node %s labels %v, want %v", name, n.Labels, labels)
	}
	var got []string
	for _, taint := range n.Spec.Taints {
		got = append(got, taint.Key+"="+taint.Value+":"+string(taint.Effect))
	}
	slices.Sort(got)
	slices.Sort(taints)
	if !slices.Equal(got, taints) {
		t.Errorf("node %s taints %v, want %v", name, got, taints)
	}
}

// createCluster creates HostedCluster demo of release image in ns, with
// the pull secret pushRelease makes.
func createCluster(t *testing.T, ns, image string) *hyperv1.HostedCluster {
	t.Helper()
	return createClusterOf(t, ns, image, hyperv1.NonePlatform)
}

// createClusterOf creates HostedCluster demo of platform in ns.
func createClusterOf(t *testing.T, ns, image string, platform hyperv1.PlatformType) *hyperv1.HostedCluster {
	t.Helper()
	hc := &hyperv1.HostedCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "demo"},
		Spec: hyperv1.HostedClusterSpec{
			Release: hyperv1.Release{Image: image}, Platform: hyperv1.PlatformSpec{Type: platform},
			PullSecret: hyperv1.LocalObjectReference{Name: "pull-secret"}, Services: hyperv1.NodePortServices("198.18.0.11", 0),
		},
	}
	if err := env.Client.Create(t.Context(), hc); err != nil {
		t.Fatal(err)
	}
	return hc
}

// countingProvider counts the reads of release payloads.
type countingProvider struct {
	releaseinfo.Provider
	lookups atomic.Int32
}

func (p *countingProvider) Lookup(ctx context.Context, pullSpec string, pullSecret []byte) (*releaseinfo.ReleaseImage, error) {
	p.lookups.Add(1)
	return p.Provider.Lookup(ctx, pullSpec, pullSecret)
}

// TestNodePoolReleaseReadOnce reads a pool's release once, not on every
// pass (passes come every few seconds while nodes join), again once
// ReleaseRecheck has passed, and at once for a new release image.
func TestNodePoolReleaseReadOnce(t *testing.T) {
	ns := env.Namespace(t)
	registry, releases := pushRelease(t, ns, "4.17.0", "4.16.0")
	provider := &countingProvider{Provider: registry}
	now := time.Now()
	r := &Reconciler{Client: env.Client, APIReader: env.Client, Releases: provider, Now: func() time.Time { return now }}
	createCluster(t, ns, releases[0])
	np := &hyperv1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pool"},
		Spec: hyperv1.NodePoolSpec{
			ClusterName: "demo", Release: hyperv1.Release{Image: releases[0]},
			Platform:   hyperv1.NodePoolPlatform{Type: hyperv1.NonePlatform},
			Management: hyperv1.NodePoolManagement{UpgradeType: hyperv1.UpgradeTypeReplace},
		},
	}
	if err := env.Client.Create(t.Context(), np); err != nil {
		t.Fatal(err)
	}
	pass := func() {
		t.Helper()
		if _, err := r.Reconcile(t.Context(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(np)}); err != nil {
			t.Fatal(err)
		}
	}
	expect := func(what string, want int32) {
		t.Helper()
		if got := provider.lookups.Load(); got != want {
			t.Errorf("%s: %d reads of the release, want %d", what, got, want)
		}
	}
	for range 3 {
		pass()
	}
	expect("three passes", 1)
	now = now.Add(ReleaseRecheck)
	pass()
	expect("a pass after ReleaseRecheck", 2)
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(np), np); err != nil {
		t.Fatal(err)
	}
	np.Spec.Release.Image = releases[1]
	if err := env.Client.Update(t.Context(), np); err != nil {
		t.Fatal(err)
	}
	pass()
	expect("a pass with a new release image", 3)
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(np), np); err != nil {
		t.Fatal(err)
	}
	if c := condition(t, np, hyperv1.ValidReleaseImage); c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "4.16.0") {
		t.Errorf("ValidReleaseImage: %+v, want True for 4.16.0", c)
	}
}

// TestNodePoolOfAnotherShardIsANoOp: a request the shard queue let in
// while the NodePool was not in the cache (its shard unknown) is left
// alone once read, when its cluster belongs to another shard: no
// finalizer, no status.
func TestNodePoolOfAnotherShardIsANoOp(t *testing.T) {
	ns := env.Namespace(t)
	np := &hyperv1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "elsewhere"},
		Spec: hyperv1.NodePoolSpec{
			ClusterName: "demo",
			Release:     hyperv1.Release{Image: "quay.io/openshift-release-dev/ocp-release:4.17.0-x86_64"},
			Platform:    hyperv1.NodePoolPlatform{Type: hyperv1.NonePlatform},
			Management:  hyperv1.NodePoolManagement{UpgradeType: hyperv1.UpgradeTypeReplace},
		},
	}
	if err := env.Client.Create(t.Context(), np); err != nil {
		t.Fatal(err)
	}
	shard := leaderelection.ShardOf(hyperv1.HostedClusterShardKey(ns, np.Spec.ClusterName), 2)
	r := &Reconciler{Client: env.Client, APIReader: env.Client, Shard: leaderelection.Shard{Index: 1 - shard, Count: 2}}
	if _, err := r.Reconcile(t.Context(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(np)}); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(np), np); err != nil {
		t.Fatal(err)
	}
	if len(np.Finalizers) != 0 || len(np.Status.Conditions) != 0 {
		t.Errorf("shard %d's controller wrote NodePool %s/%s, of shard %d: finalizers %v, conditions %v", 1-shard, ns, np.Name, shard, np.Finalizers, np.Status.Conditions)
	}
}
