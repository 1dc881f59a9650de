package hostedclusterconfig

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/control-plane-operator/pki"
	"github.com/hypershift-le/hypershift/support/apply"
	"github.com/hypershift-le/hypershift/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	os.Exit(testenv.Main(m, testenv.Options{SkipAdmissionPolicies: true, ServiceClusterIPRange: "172.31.0.0/16"}, &env))
}

// TestReconcileConfiguresTheHostedCluster runs the controller with the
// test's API server standing in for the hosted one: nothing happens before
// the kubeconfig exists; then every object is applied; a second pass sends
// nothing; a binding a user deletes or repoints is repaired.
func TestReconcileConfiguresTheHostedCluster(t *testing.T) {
	ns := env.Namespace(t)
	hcp := &hyperv1.HostedControlPlane{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "demo"},
		Spec: hyperv1.HostedControlPlaneSpec{
			ReleaseImage: "registry.example/ocp-release:4.17.0",
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
	r := &Reconciler{Name: "demo", Client: env.Client}
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(hcp)}

	if res, err := r.Reconcile(t.Context(), req); err != nil || !res.IsZero() {
		t.Fatalf("without a kubeconfig: %v %+v, want nothing to do until the Secret exists", res, err)
	}
	path, err := env.AddUserKubeconfig("hosted-cluster-config", pki.MastersGroup)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pki.HostedClusterConfigKubeconfigSecret},
		Data:       map[string][]byte{pki.KubeconfigKey: kubeconfig},
	}
	if err := env.Client.Create(t.Context(), secret); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, obj := range Objects() {
			_ = env.Client.Delete(context.Background(), obj)
		}
	})

	if res, err := r.Reconcile(t.Context(), req); err != nil || res.RequeueAfter != ResyncPeriod {
		t.Fatalf("first pass: %+v %v, want a resync after %s", res, err, ResyncPeriod)
	}
	assertConfigured(t)

	applier := apply.Applier{Client: r.hosted, FieldOwner: FieldOwner}
	for _, obj := range Objects() {
		if sent, err := applier.Apply(t.Context(), obj); err != nil || sent {
			t.Errorf("%s after a pass: sent=%v err=%v, want nothing to send", obj.GetName(), sent, err)
		}
	}

	t.Run("a deleted binding is applied again", func(t *testing.T) {
		crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "hypershift:node-bootstrapper"}}
		if err := env.Client.Delete(t.Context(), crb); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Reconcile(t.Context(), req); err != nil {
			t.Fatal(err)
		}
		assertConfigured(t)
	})

	t.Run("a binding given another subject gets its own back", func(t *testing.T) {
		crb := &rbacv1.ClusterRoleBinding{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Name: "hypershift:kube-apiserver-kubelet-client"}, crb); err != nil {
			t.Fatal(err)
		}
		crb.Subjects[0].Name = "someone-else"
		if err := env.Client.Update(t.Context(), crb); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Reconcile(t.Context(), req); err != nil {
			t.Fatal(err)
		}
		assertConfigured(t)
	})

	t.Run("a NodePool's token is installed while the pool has one, and removed with it", func(t *testing.T) {
		pool := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: hyperv1.NodePoolTokenSecretName("workers"),
				Labels: map[string]string{hyperv1.NodePoolLabel: "workers", hyperv1.ControlPlaneComponentLabel: hyperv1.NodePoolTokenComponent}},
			Data: map[string][]byte{"token-id": []byte("abc123"), "token-secret": []byte("0123456789abcdef"), "expiration": []byte("2099-01-01T00:00:00Z")},
		}
		if err := env.Client.Create(t.Context(), pool); err != nil {
			t.Fatal(err)
		}
		installed := client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: "bootstrap-token-abc123"}
		t.Cleanup(func() {
			_ = env.Client.Delete(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: installed.Namespace, Name: installed.Name}})
		})
		if _, err := r.Reconcile(t.Context(), req); err != nil {
			t.Fatal(err)
		}
		token := &corev1.Secret{}
		if err := env.Client.Get(t.Context(), installed, token); err != nil {
			t.Fatal(err)
		}
		if token.Type != corev1.SecretTypeBootstrapToken || string(token.Data["auth-extra-groups"]) != hyperv1.NodeBootstrapGroup ||
			string(token.Data["token-secret"]) != "0123456789abcdef" || string(token.Data["usage-bootstrap-authentication"]) != "true" {
			t.Errorf("installed token: type %s data %q", token.Type, token.Data)
		}
		if err := env.Client.Delete(t.Context(), pool); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Reconcile(t.Context(), req); err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Get(t.Context(), installed, token); !apierrors.IsNotFound(err) {
			t.Errorf("the token of a deleted pool: %v, want it removed", err)
		}
	})

	t.Run("a token of the pool's earlier config is revoked, one of the same config kept", func(t *testing.T) {
		pool := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: hyperv1.NodePoolTokenSecretName("config"),
				Labels:      map[string]string{hyperv1.NodePoolLabel: "config", hyperv1.ControlPlaneComponentLabel: hyperv1.NodePoolTokenComponent},
				Annotations: map[string]string{hyperv1.NodePoolConfigAnnotation: "c1"}},
			Data: map[string][]byte{"token-id": []byte("aaa111"), "token-secret": []byte("0123456789abcdef"), "expiration": []byte("2099-01-01T00:00:00Z")},
		}
		if err := env.Client.Create(t.Context(), pool); err != nil {
			t.Fatal(err)
		}
		installed := func(id string) bool {
			err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: "bootstrap-token-" + id}, &corev1.Secret{})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
			return err == nil
		}
		t.Cleanup(func() {
			_ = env.Client.Delete(context.Background(), pool)
			for _, id := range []string{"aaa111", "bbb222", "ccc333"} {
				_ = env.Client.Delete(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: "bootstrap-token-" + id}})
			}
		})
		next := func(id, config string) {
			t.Helper()
			pool.Data["token-id"], pool.Annotations[hyperv1.NodePoolConfigAnnotation] = []byte(id), config
			if err := env.Client.Update(t.Context(), pool); err != nil {
				t.Fatal(err)
			}
			if _, err := r.Reconcile(t.Context(), req); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := r.Reconcile(t.Context(), req); err != nil {
			t.Fatal(err)
		}
		next("bbb222", "c1") // rotated on its clock: a machine mid-join still joins
		if !installed("aaa111") || !installed("bbb222") {
			t.Fatalf("after a rotation of the same config: aaa111 %v, bbb222 %v; want both", installed("aaa111"), installed("bbb222"))
		}
		next("ccc333", "c2") // the pool's config changed
		if installed("aaa111") || installed("bbb222") || !installed("ccc333") {
			t.Errorf("after a config change: aaa111 %v, bbb222 %v, ccc333 %v; want only the new token", installed("aaa111"), installed("bbb222"), installed("ccc333"))
		}
	})

	t.Run("a kubeconfig that does not parse is named", func(t *testing.T) {
		secret.Data[pki.KubeconfigKey] = []byte("{not yaml")
		if err := env.Client.Update(t.Context(), secret); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Reconcile(t.Context(), req); err == nil {
			t.Fatal("no error")
		} else if want := "secret " + pki.HostedClusterConfigKubeconfigSecret + " holds no usable kubeconfig"; !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q does not say %q", err, want)
		}
	})
}

// assertConfigured fails unless the hosted cluster holds every object as
// Objects renders it: the role each binding grants and to whom.
func assertConfigured(t *testing.T) {
	t.Helper()
	for _, obj := range Objects() {
		want, ok := obj.(*rbacv1.ClusterRoleBinding)
		if !ok {
			t.Fatalf("unexpected %T", obj)
		}
		got := &rbacv1.ClusterRoleBinding{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Name: want.Name}, got); err != nil {
			t.Fatalf("%s: %v", want.Name, err)
		}
		if got.RoleRef != want.RoleRef || len(got.Subjects) != 1 || got.Subjects[0] != want.Subjects[0] {
			t.Errorf("%s grants %s to %v, want %s to %v", want.Name, got.RoleRef.Name, got.Subjects, want.RoleRef.Name, want.Subjects)
		}
	}
}
