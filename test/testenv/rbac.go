package testenv

import (
	"context"
	"fmt"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
