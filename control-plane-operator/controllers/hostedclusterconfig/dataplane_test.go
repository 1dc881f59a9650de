package hostedclusterconfig

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/control-plane-operator/pki"
	"github.com/hypershift-le/hypershift/support/apply"
	"github.com/hypershift-le/hypershift/support/releaseinfo"
	"github.com/hypershift-le/hypershift/support/releaseinfo/releasetest"
)

// TestDataPlaneFollowsTheReleaseAndTheEndpoint gives the hosted cluster
// (the test's API server standing in for it) what its nodes need once the
// kube-apiserver's endpoint is published: kube-proxy and CoreDNS of the
// control plane's release payload, the kube-dns Service at the tenth
// address of the Service network, kube-proxy reaching the API at the
// endpoint; a second pass sends nothing.
func TestDataPlaneFollowsTheReleaseAndTheEndpoint(t *testing.T) {
	ns := env.Namespace(t)
	registry := releasetest.NewRegistry(t)
	refs := map[string]string{
		KubeProxyImageTag:  registry.Host() + "/kube-proxy@sha256:" + strings.Repeat("b1", 32),
		CoreDNSImageTag:    registry.Host() + "/coredns@sha256:" + strings.Repeat("c2", 32),
		PodNetworkImageTag: registry.Host() + "/pod-network@sha256:" + strings.Repeat("d3", 32),
	}
	image, _ := registry.PushRelease(t, "ocp-release:4.17.0", "4.17.0", refs)
	if err := env.Client.Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: hyperv1.PullSecretName},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: registry.DockerConfigJSON("u", "p")},
	}); err != nil {
		t.Fatal(err)
	}
	hcp := &hyperv1.HostedControlPlane{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "demo"},
		Spec: hyperv1.HostedControlPlaneSpec{
			ReleaseImage: image,
			Platform:     hyperv1.PlatformSpec{Type: hyperv1.NonePlatform},
			PullSecret:   hyperv1.LocalObjectReference{Name: hyperv1.PullSecretName},
			Services: []hyperv1.ServicePublishingStrategyMapping{{Service: hyperv1.APIServer, ServicePublishingStrategy: hyperv1.ServicePublishingStrategy{
				Type: hyperv1.NodePort, NodePort: &hyperv1.NodePortPublishingStrategy{Address: "127.0.0.1"},
			}}},
		},
	}
	if err := env.Client.Create(t.Context(), hcp); err != nil {
		t.Fatal(err)
	}
	path, err := env.AddUserKubeconfig("hosted-cluster-config-dataplane", pki.MastersGroup)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pki.HostedClusterConfigKubeconfigSecret},
		Data:       map[string][]byte{pki.KubeconfigKey: kubeconfig},
	}); err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{Name: "demo", Client: env.Client, APIReader: env.Client,
		Releases: releaseinfo.NewRegistryProvider(releaseinfo.WithInsecureRegistries(registry.Host()))}
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(hcp)}
	if _, err := r.Reconcile(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	ds := &appsv1.DaemonSet{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: "kube-proxy"}, ds); err == nil {
		t.Fatal("kube-proxy before the endpoint is published: it would reach no API server")
	}

	hcp.Status.ControlPlaneEndpoint = &hyperv1.APIEndpoint{Host: "192.0.2.10", Port: 31443}
	if err := env.Client.Status().Update(t.Context(), hcp); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	objects, err := DataPlane(DataPlaneInputs{HostedControlPlane: hcp, KubeProxyImage: refs[KubeProxyImageTag], CoreDNSImage: refs[CoreDNSImageTag], PodNetworkImage: refs[PodNetworkImageTag]})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, obj := range objects {
			_ = env.Client.Delete(context.Background(), obj)
		}
	})
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: "kube-proxy"}, ds); err != nil {
		t.Fatal(err)
	}
	if c := ds.Spec.Template.Spec.Containers[0]; c.Image != refs[KubeProxyImageTag] || !ds.Spec.Template.Spec.HostNetwork {
		t.Errorf("kube-proxy runs %s (hostNetwork %v), want the payload's %s on the node's network", c.Image, ds.Spec.Template.Spec.HostNetwork, refs[KubeProxyImageTag])
	}
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: "kube-proxy"}, cm); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cm.Data["kubeconfig.conf"], "server: https://192.0.2.10:31443") {
		t.Errorf("kube-proxy's kubeconfig does not reach the published endpoint:\n%s", cm.Data["kubeconfig.conf"])
	}
	dns := &corev1.Service{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: "kube-dns"}, dns); err != nil {
		t.Fatal(err)
	}
	if dns.Spec.ClusterIP != "172.31.0.10" {
		t.Errorf("kube-dns at %s, want 172.31.0.10, the tenth address of the Service network, as the kubelets are told", dns.Spec.ClusterIP)
	}
	deploy := &appsv1.Deployment{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: "coredns"}, deploy); err != nil {
		t.Fatal(err)
	}
	if c := deploy.Spec.Template.Spec.Containers[0]; c.Image != refs[CoreDNSImageTag] {
		t.Errorf("CoreDNS runs %s, want the payload's %s", c.Image, refs[CoreDNSImageTag])
	}

	podNet := &appsv1.DaemonSet{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: "pod-network"}, podNet); err != nil {
		t.Fatal(err)
	}
	if spec := podNet.Spec.Template.Spec; spec.Containers[0].Image != refs[PodNetworkImageTag] || !spec.HostNetwork ||
		spec.NodeSelector[hyperv1.PodNetworkNodeLabel] != "true" || !slices.Contains(spec.Containers[0].Command, "--cluster-network=10.132.0.0/14") {
		t.Errorf("the pod network runs %s (hostNetwork %v) on %v with %v; want the payload's %s on the machines of platform Pod, on the cluster network",
			spec.Containers[0].Image, spec.HostNetwork, spec.NodeSelector, spec.Containers[0].Command, refs[PodNetworkImageTag])
	}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: "pod-network"}, cm); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cm.Data["kubeconfig.conf"], "server: https://192.0.2.10:31443") {
		t.Errorf("the pod network's kubeconfig does not reach the published endpoint:\n%s", cm.Data["kubeconfig.conf"])
	}
	// A machine that runs the pod network itself gets no DaemonSet pod, and
	// its agent, as the pod network's user, reads Nodes and writes none.
	if a := podNet.Spec.Template.Spec.Affinity; a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil ||
		!slices.ContainsFunc(a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions, func(r corev1.NodeSelectorRequirement) bool {
			return r.Key == hyperv1.PodNetworkAgentLabel && r.Operator == corev1.NodeSelectorOpDoesNotExist
		}) {
		t.Errorf("the pod network's DaemonSet runs on machines that run it themselves: affinity %+v", a)
	}
	agent, err := env.AddUser(pki.PodNetworkUser)
	if err != nil {
		t.Fatal(err)
	}
	agentClient, err := kubernetes.NewForConfig(agent)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := agentClient.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{}); err != nil {
		t.Errorf("the machines' pod network cannot list Nodes as %s: %v", pki.PodNetworkUser, err)
	}
	if err := agentClient.CoreV1().Nodes().Delete(t.Context(), "any", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the machines' pod network deleting a Node: %v, want forbidden", err)
	}

	applier := apply.Applier{Client: r.hosted, FieldOwner: FieldOwner}
	for _, obj := range objects {
		if _, isSlice := obj.(*discoveryv1.EndpointSlice); isSlice {
			continue // the test's API server reconciles the kubernetes endpoint itself
		}
		if sent, err := applier.Apply(t.Context(), obj); err != nil || sent {
			t.Errorf("%T %s after a pass: sent=%v err=%v, want nothing to send", obj, obj.GetName(), sent, err)
		}
	}

	t.Run("a payload without a pod network image gives no pod network", func(t *testing.T) {
		objects, err := DataPlane(DataPlaneInputs{HostedControlPlane: hcp, KubeProxyImage: "k", CoreDNSImage: "c"})
		if err != nil {
			t.Fatal(err)
		}
		for _, obj := range objects {
			if obj.GetName() == "pod-network" {
				t.Errorf("%T %s", obj, obj.GetName())
			}
		}
	})

	for _, host := range []string{"api.demo.example.com", "127.0.0.1"} {
		t.Run("endpoint "+host+" gives the kubernetes Service no endpoint", func(t *testing.T) {
			named := hcp.DeepCopy()
			named.Status.ControlPlaneEndpoint.Host = host
			objects, err := DataPlane(DataPlaneInputs{HostedControlPlane: named, KubeProxyImage: "k", CoreDNSImage: "c"})
			if err != nil {
				t.Fatal(err)
			}
			for _, obj := range objects {
				if _, isSlice := obj.(*discoveryv1.EndpointSlice); isSlice {
					t.Errorf("an EndpointSlice for %s: %+v", host, obj)
				}
			}
		})
	}
}
