package e2e

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/render"
	"github.com/hypershift-le/hypershift/support/testutil"
	"github.com/hypershift-le/hypershift/test/internal/pods"
)

// testIsolation checks, on HostedCluster machinesCluster (platform Pod,
// its machines up), that the tenant's side reaches the management
// cluster only through what is published: a hosted pod on a machine is
// refused the management API server, a management node's kubelet, its
// own cluster's etcd and another tenant's etcd and kube-apiserver, and
// reaches its cluster's published endpoint and the registry; a hosted
// webhook whose URL names the management API server is refused, one
// naming the cluster's own etcd is called. The same dials from a pod of
// the management cluster connect: what refuses them is the policies.
// (The management cluster's etcd listens on loopback only: no pod reaches
// it.)
func testIsolation(t *testing.T, h *hostedCluster, hosted client.Client) {
	ctx := t.Context()
	for _, name := range []string{render.MachinesEgressPolicyName, render.KubeAPIServerEgressPolicyName} {
		if err := lc.Env.Client.Get(ctx, client.ObjectKey{Namespace: "clusters-" + machinesCluster, Name: name}, &networkingv1.NetworkPolicy{}); err != nil {
			t.Fatalf("NetworkPolicy %s of the control-plane namespace: %v", name, err)
		}
	}
	hc := &hyperv1.HostedCluster{}
	if err := lc.Env.Client.Get(ctx, client.ObjectKey{Namespace: "clusters", Name: machinesCluster}, hc); err != nil {
		t.Fatal(err)
	}
	if hc.Status.ControlPlaneEndpoint == nil {
		t.Fatal("no published endpoint")
	}
	published := net.JoinHostPort(hc.Status.ControlPlaneEndpoint.Host, strconv.Itoa(int(hc.Status.ControlPlaneEndpoint.Port)))
	node := &corev1.Node{}
	if err := lc.Env.Client.Get(ctx, client.ObjectKey{Name: lc.Nodes[0].Name}, node); err != nil {
		t.Fatal(err)
	}
	kubelet := net.JoinHostPort(lc.Nodes[0].Address, strconv.Itoa(int(node.Status.DaemonEndpoints.KubeletEndpoint.Port)))
	podAddress := func(namespace, component string, port int) string {
		list := &corev1.PodList{}
		if err := lc.Env.Client.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{"app": component}); err != nil {
			t.Fatal(err)
		}
		for _, p := range list.Items {
			if p.Status.PodIP != "" && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				return net.JoinHostPort(p.Status.PodIP, strconv.Itoa(port))
			}
		}
		t.Fatalf("no running %s pod with an address in %s", component, namespace)
		return ""
	}
	forbidden := map[string]string{
		lc.APIServerOnNodes(): "the management API server",
		kubelet:               "the kubelet of management node " + lc.Nodes[0].Name,
		podAddress("clusters-"+machinesCluster, "etcd", 2379): "its own cluster's etcd",
		podAddress("clusters-demo", "etcd", 2379):             "another tenant's etcd",
		podAddress("clusters-demo", "kube-apiserver", 6443):   "another tenant's kube-apiserver pod",
	}
	allowed := map[string]string{published: "its cluster's published endpoint", lc.Registry.Host: "the registry"}
	var targets []string
	for a := range forbidden {
		targets = append(targets, a)
	}
	for a := range allowed {
		targets = append(targets, a)
	}
	echo := pushEcho(t)
	dial := func(c client.Client, namespace, name string) map[string]string {
		p := pods.New(namespace, name, "", echo, "/usr/bin/echo", "dial", strings.Join(targets, ","))
		p.Spec.AutomountServiceAccountToken = ptr.To(false)
		pods.Run(t, c, p, corev1.PodSucceeded)
		out := map[string]string{}
		var log string
		if c == hosted {
			log = h.kubectl(t, "logs", "-n", namespace, name)
		} else {
			var err error
			if log, err = lc.PodLog(ctx, namespace, name, name); err != nil {
				t.Fatal(err)
			}
		}
		for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
			address, result, _ := strings.Cut(line, ": ")
			out[address] = result
		}
		return out
	}

	// The control: from a pod of the management cluster every path is open.
	control := "e2e-isolation-dial"
	defer func() {
		_ = lc.Env.Client.Delete(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: control}})
	}()
	for address, result := range dial(lc.Env.Client, metav1.NamespaceDefault, control) {
		if result != "connected" {
			t.Errorf("from a management pod, %s (%s): %s; want connected (the path must exist for its refusal to mean anything)", address, forbidden[address]+allowed[address], result)
		}
	}
	// From a hosted pod on a machine.
	defer func() {
		_ = hosted.Delete(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: "isolation-dial"}})
	}()
	results := dial(hosted, metav1.NamespaceDefault, "isolation-dial")
	for address, what := range forbidden {
		if r := results[address]; !strings.Contains(r, "connection refused") {
			t.Errorf("from a hosted pod, %s at %s: %q; want the connection refused", what, address, r)
		} else {
			t.Logf("from a hosted pod, %s at %s: %s", what, address, r)
		}
	}
	for address, what := range allowed {
		if r := results[address]; r != "connected" {
			t.Errorf("from a hosted pod, %s at %s: %q; want connected", what, address, r)
		}
	}

	// A hosted webhook: the hosted kube-apiserver calls its URL.
	probe := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "isolation-probe", Labels: map[string]string{"isolation-probe": "true"}}}
	if err := hosted.Create(ctx, probe); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = hosted.Delete(context.Background(), probe) }()
	webhook := func(name, address string) string {
		cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{
				Name:                    name + ".isolation.e2e",
				ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://" + address + "/validate")},
				Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}},
				NamespaceSelector:       &metav1.LabelSelector{MatchLabels: probe.Labels},
				FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
				SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
				AdmissionReviewVersions: []string{"v1"},
				TimeoutSeconds:          ptr.To(int32(5)),
			}},
		}
		if err := hosted.Create(ctx, cfg); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = hosted.Delete(ctx, cfg) }()
		var refusal string
		// The kube-apiserver's webhook configuration arrives through its
		// informer: the first creates may not be judged yet.
		testutil.Eventually(t, 30*time.Second, func() error {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: probe.Name, GenerateName: "probe-"}}
			err := hosted.Create(ctx, cm)
			if err == nil {
				_ = hosted.Delete(ctx, cm)
				return fmt.Errorf("a ConfigMap was created without webhook %s's answer", name)
			}
			if !strings.Contains(err.Error(), "webhook") {
				return fmt.Errorf("creating a ConfigMap: %w", err)
			}
			refusal = err.Error()
			return nil
		})
		return refusal
	}
	if got := webhook("management-api-server", lc.APIServerOnNodes()); !strings.Contains(got, "failed calling webhook") || !strings.Contains(got, "connection refused") {
		t.Errorf("a hosted webhook at the management API server: %q; want the call's connection refused", got)
	} else {
		t.Logf("a hosted webhook at the management API server: %s", got)
	}
	ownEtcd := podAddress("clusters-"+machinesCluster, "etcd", 2379)
	if got := webhook("own-etcd", ownEtcd); !strings.Contains(got, "failed calling webhook") || strings.Contains(got, "connection refused") {
		t.Errorf("a hosted webhook at its own cluster's etcd %s: %q; want a call that connected (and failed on TLS)", ownEtcd, got)
	}
}
