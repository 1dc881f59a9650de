package hostedcluster_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/testutil"
	"github.com/hypershift-le/hypershift/test/testenv"
)

// TestRetriedSoonAfterAnOutage takes the operator's rights away for 45s
// while its pass fails on a changed pull secret (a read the API server
// refuses: an error, retried with the controller's failure backoff), then
// gives them back. Nothing else changes, so no event starts a pass: the
// copy must follow within the backoff's cap (10s) and a pass's time. With
// controller-runtime's default backoff (5ms doubling up to 1000s) the 13
// failures of 45s put the next retry about 40s later.
func TestRetriedSoonAfterAnOutage(t *testing.T) {
	user := startOperator(t, nil)
	c := newCluster(t, "4.17.0", nil)
	awaitControlPlane(t, c)
	copyOf := func() []byte {
		s := &corev1.Secret{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: c.controlPlaneNamespace(), Name: hyperv1.PullSecretName}, s); err != nil {
			return nil
		}
		return s.Data[corev1.DockerConfigJsonKey]
	}
	testutil.Eventually(t, converge, func() error {
		if copyOf() == nil {
			return fmt.Errorf("no pull secret copy yet")
		}
		return nil
	})

	binding := &rbacv1.ClusterRoleBinding{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: user}, binding); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(t.Context(), binding); err != nil {
		t.Fatal(err)
	}
	awaitMayGetSecrets(t, user, c.hc.Namespace, false)
	secret := &corev1.Secret{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: c.hc.Namespace, Name: c.hc.Spec.PullSecret.Name}, secret); err != nil {
		t.Fatal(err)
	}
	secret.Data[corev1.DockerConfigJsonKey] = c.registry.DockerConfigJSON("user", "after-the-outage")
	if err := env.Client.Update(t.Context(), secret); err != nil {
		t.Fatal(err)
	}
	time.Sleep(45 * time.Second)

	binding = &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: binding.Name},
		RoleRef:    binding.RoleRef,
		Subjects:   binding.Subjects,
	}
	if err := env.Client.Create(t.Context(), binding); err != nil {
		t.Fatal(err)
	}
	awaitMayGetSecrets(t, user, c.hc.Namespace, true)
	back := time.Now()
	testutil.Eventually(t, 90*time.Second, func() error {
		if got := copyOf(); !bytes.Equal(got, secret.Data[corev1.DockerConfigJsonKey]) {
			return fmt.Errorf("the pull secret copy is still %q", got)
		}
		return nil
	})
	took := time.Since(back)
	t.Logf("the pull secret copy followed %s after the operator's rights came back", took.Round(100*time.Millisecond))
	if took > 20*time.Second {
		t.Fatalf("the pull secret copy followed %s after the operator's rights came back, want <= 20s (a failed pass is retried within 10s)", took.Round(100*time.Millisecond))
	}
}

// awaitMayGetSecrets waits until the API server's authorizer, which follows
// RBAC through its informers, lets user read Secrets in namespace, or not.
func awaitMayGetSecrets(t *testing.T, user, namespace string, allowed bool) {
	t.Helper()
	testenv.AwaitAccess(t, env.Client, user, converge,
		testenv.Access{ResourceAttributes: authorizationv1.ResourceAttributes{Namespace: namespace, Resource: "secrets", Verb: "get"}, Allowed: allowed})
}
