package testenv

import (
	"context"
	"fmt"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hypershift-le/hypershift/support/testutil"
)

// BindClusterRole creates role, if missing, and binds it, and only it, to
// user with a ClusterRoleBinding named after the user, as `hypershift
// install` binds an operator's ServiceAccount.
func BindClusterRole(t testing.TB, c client.Client, role *rbacv1.ClusterRole, user string) {
	t.Helper()
	if err := c.Create(t.Context(), role); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}
	if err := c.Create(t.Context(), binding); err != nil {
		t.Fatal(err)
	}
}

// bindKubeletClient grants the API server's kubelet client user what
// kubelets authorize it for: logs, exec, port-forward, metrics.
func (e *Env) bindKubeletClient(ctx context.Context) error {
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: KubeletClientUser},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:kubelet-api-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: KubeletClientUser}},
	}
	if err := e.Client.Create(ctx, binding); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("failed to bind the kubelet client user: %w", err)
	}
	return nil
}

// Access is one request a user may or may not make, as a
// SubjectAccessReview asks it.
type Access struct {
	authorizationv1.ResourceAttributes
	Allowed bool
}

// AwaitAccess waits, up to timeout, until the API server's authorizer
// answers every access in want as wanted for user. The RBAC authorizer
// follows roles and bindings through its own informers: a binding just
// written or deleted is not in force at once, and a test that changes a
// user's rights must wait for them before it relies on them.
func AwaitAccess(t testing.TB, c client.Client, user string, timeout time.Duration, want ...Access) {
	t.Helper()
	testutil.Eventually(t, timeout, func() error {
		for _, access := range want {
			review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: access.DeepCopy()}}
			if err := c.Create(t.Context(), review); err != nil {
				return err
			}
			if review.Status.Allowed != access.Allowed {
				return fmt.Errorf("%s may %s %s (namespace %q, name %q): %t, want %t",
					user, access.Verb, access.Resource, access.Namespace, access.Name, review.Status.Allowed, access.Allowed)
			}
		}
		return nil
	})
}
