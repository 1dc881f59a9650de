package cluster

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/releaseinfo/releasetest"
	"github.com/hypershift-le/hypershift/test/testenv"
)

// TestCreateRefusesANodePortInUse: create cluster refuses, before it
// creates anything, a node port another HostedCluster asks for (naming it)
// or another Service holds (in the API server's words).
func TestCreateRefusesANodePortInUse(t *testing.T) {
	kubeconfig, err := env.AddUserKubeconfig("cli-node-ports", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	elsewhere := env.Namespace(t)
	holder := &hyperv1.HostedCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: elsewhere, Name: "holder"},
		Spec: hyperv1.HostedClusterSpec{
			Release:    hyperv1.Release{Image: "quay.io/x/y:1"},
			Platform:   hyperv1.PlatformSpec{Type: hyperv1.NonePlatform},
			PullSecret: hyperv1.LocalObjectReference{Name: "pull-secret"},
			Services:   hyperv1.NodePortServices("127.0.0.1", 30631),
		},
	}
	service := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: elsewhere, Name: "holder"},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 443, TargetPort: intstr.FromInt32(443), NodePort: 30632}}},
	}
	for _, obj := range []client.Object{holder, service} {
		if err := env.Client.Create(t.Context(), obj); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		port string
		want string
	}{
		{name: "when another HostedCluster asks for the port, it is named", port: "30631",
			want: hyperv1.NodePortConflictMessage(30631, elsewhere+"/holder") + " (--external-api-server-port)"},
		{name: "when another Service holds the port, the API server's words say so", port: "30632",
			want: "--external-api-server-port 30632 cannot be used: the management cluster's API server refused a Service on it (Invalid value: 30632: provided port is already allocated); choose another port, or leave it unset"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := "clusters-port-" + tt.port
			_, err := execute(t.Context(), NewCreateCommand, "cluster", "none", "--kubeconfig="+kubeconfig, "--name=demo", "--namespace="+ns,
				"--release-image=quay.io/x/y:1", "--pull-secret="+pullSecretFile(t, `{"auths":{}}`),
				"--external-api-server-address=127.0.0.1", "--external-api-server-port="+tt.port)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
			assertNotCreated(t, ns, "demo")
			namespace := &corev1.Namespace{}
			if err := env.Client.Get(t.Context(), client.ObjectKey{Name: ns}, namespace); err == nil && namespace.DeletionTimestamp.IsZero() {
				t.Errorf("namespace %s, created for the refused cluster, was left behind", ns)
			}
		})
	}
}

// TestCreateWaitStopsWhenTheAPIServerRefuses: the hypershift-operator's
// objects for a new cluster are refused by a policy of the management
// cluster; create --wait ends at once with the API server's words.
func TestCreateWaitStopsWhenTheAPIServerRefuses(t *testing.T) {
	startOperator(t)
	kubeconfig, err := env.AddUserKubeconfig("cli-refused-by-policy", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	ns := env.Namespace(t)
	controlPlane := hyperv1.ControlPlaneNamespace(ns, "demo")
	policy := env.Refuse(t, testenv.Refusal{Resource: "namespaces", Name: controlPlane, Message: "hosted control planes need an approval here"},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: controlPlane}})
	registry := releasetest.NewRegistry(t)
	image, _ := registry.PushRelease(t, "ocp-release:4.17.0", "4.17.0", map[string]string{"hypershift": registry.Host() + "/hypershift:4.17.0"})
	started := time.Now()
	out, err := execute(t.Context(), NewCreateCommand, "cluster", "none", "--kubeconfig="+kubeconfig, "--name=demo", "--namespace="+ns,
		"--release-image="+image, "--pull-secret="+pullSecretFile(t, string(registry.DockerConfigJSON("u", "p"))),
		"--external-api-server-address=127.0.0.1", "--wait", "--timeout=2m")
	took := time.Since(started)
	want := "cannot become Available until its spec changes: ValidConfiguration=False (RefusedByAPIServer): Refused by the management cluster's API server: namespaces \"" +
		controlPlane + "\" is forbidden: ValidatingAdmissionPolicy '" + policy + "' with binding '" + policy + "' denied request: hosted control planes need an approval here"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v after %s, want an error containing %q\n%s", err, took, want, out)
	}
	if took > 30*time.Second {
		t.Errorf("--wait took %s to give up on what the API server refuses", took)
	}
}

// TestCreateNeedsAnAddressToPublishAt: with no node to take an address
// from, create cluster asks for one instead of leaving the kube-apiserver
// on its ClusterIP.
func TestCreateNeedsAnAddressToPublishAt(t *testing.T) {
	kubeconfig, err := env.AddUserKubeconfig("cli-no-nodes", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	_, err = execute(t.Context(), NewCreateCommand, "cluster", "none", "--kubeconfig="+kubeconfig, "--name=demo", "--namespace=clusters-no-address",
		"--release-image=quay.io/x/y:1", "--pull-secret="+pullSecretFile(t, `{"auths":{}}`))
	want := "found no node address to publish the kube-apiserver's NodePort at: pass --external-api-server-address"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want an error containing %q", err, want)
	}
}

// assertNotCreated fails t when the HostedCluster ns/name or its pull
// secret exists: a refused create must leave nothing.
func assertNotCreated(t *testing.T, ns, name string) {
	t.Helper()
	for _, obj := range []client.Object{
		&hyperv1.HostedCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-pull-secret"}},
	} {
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(obj), obj); !apierrors.IsNotFound(err) {
			t.Errorf("%T %s was created (%v)", obj, obj.GetName(), err)
		}
	}
}
