package install

import (
	"fmt"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/rbac"
	"github.com/hypershift-le/hypershift/hypershift-operator/render"
	"github.com/hypershift-le/hypershift/support/testutil"
)

// clusterRoleBinding is a binding of role to subjects.
func clusterRoleBinding(name, role string, subjects ...rbacv1.Subject) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   subjects,
	}
}

func controlPlaneOperator(namespace string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: hyperv1.ControlPlaneOperatorName}
}

// TestInstalledPolicyConfinesOperatorClusterRoleBindings installs, then
// writes ClusterRoleBindings as the operator's ServiceAccount, whose
// ClusterRole allows create, patch and delete on every one of them: the API
// server refuses all but the binding the operator manages.
func TestInstalledPolicyConfinesOperatorClusterRoleBindings(t *testing.T) {
	const namespace = "hypershift-crb"
	out, err := runInstall(t, adminKubeconfig(t, "crb-admin"), "--namespace="+namespace)
	if err != nil {
		t.Fatalf("install failed: %v\n%s", err, out)
	}
	operator := env.AsPod(t, namespace, rbac.HypershiftOperatorName, "")
	// The API server compiles policies in the background: wait until the
	// operator's own binding may not be deleted (a dry run: if it were
	// allowed, nothing is removed).
	testutil.Eventually(t, 30*time.Second, func() error {
		err := operator.Delete(t.Context(), clusterRoleBinding(rbac.HypershiftOperatorName, ""), client.DryRunAll)
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), rbac.ClusterRoleBindingPolicyName) {
			return fmt.Errorf("the policy is not enforced yet: %w", err)
		}
		return nil
	})
	const cp = "clusters-demo"
	prefixed := rbac.AuthDelegatorBindingPrefix + cp
	// An administrator made this one: a binding the operator's rights
	// could never create, under a name the operator's could.
	foreign := clusterRoleBinding(rbac.AuthDelegatorBindingPrefix+"foreign", "cluster-admin", controlPlaneOperator("foreign"))
	if err := env.Client.Create(t.Context(), foreign); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(t.Context(), foreign) })

	refusals := []struct {
		name  string
		write func() error
		// message is what the refusal says; "" for a refusal by RBAC's
		// own escalation check, which comes before admission.
		message string
	}{
		{
			name: "when it deletes cluster-admin's binding, it is refused",
			write: func() error {
				return operator.Delete(t.Context(), clusterRoleBinding("cluster-admin", ""), client.DryRunAll)
			},
			message: "may not delete ClusterRoleBinding cluster-admin: it writes only the bindings named " + rbac.AuthDelegatorBindingPrefix + "<control-plane namespace>",
		},
		{
			name: "when it creates a binding whose name lacks the prefix, it is refused",
			write: func() error {
				return operator.Create(t.Context(), clusterRoleBinding("auth-delegator-"+cp, rbac.AuthDelegatorClusterRole, controlPlaneOperator(cp)))
			},
			message: "may not create ClusterRoleBinding auth-delegator-" + cp + ": it writes only the bindings named",
		},
		{
			name: "when it creates a binding of cluster-admin under the prefix, it is refused",
			write: func() error {
				return operator.Create(t.Context(), clusterRoleBinding(prefixed, "cluster-admin", controlPlaneOperator(cp)))
			},
		},
		{
			name:    "when it deletes a binding of cluster-admin under the prefix, it is refused",
			write:   func() error { return operator.Delete(t.Context(), foreign.DeepCopy()) },
			message: "may not delete ClusterRoleBinding " + foreign.Name + ": its roleRef must be ClusterRole " + rbac.AuthDelegatorClusterRole + ", not ClusterRole cluster-admin",
		},
		{
			name: "when its subject is in another namespace than the name says, it is refused",
			write: func() error {
				return operator.Create(t.Context(), clusterRoleBinding(prefixed, rbac.AuthDelegatorClusterRole, controlPlaneOperator("kube-system")))
			},
			message: "its subject must be ServiceAccount " + cp + "/control-plane-operator (the namespace its name says), not ServiceAccount kube-system/control-plane-operator",
		},
		{
			name: "when its subject is another ServiceAccount of the namespace, it is refused",
			write: func() error {
				return operator.Create(t.Context(), clusterRoleBinding(prefixed, rbac.AuthDelegatorClusterRole, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: cp, Name: "default"}))
			},
			message: "not ServiceAccount " + cp + "/default",
		},
		{
			name: "when its subject is a user, it is refused",
			write: func() error {
				return operator.Create(t.Context(), clusterRoleBinding(prefixed, rbac.AuthDelegatorClusterRole, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "mallory"}))
			},
			message: "not User mallory",
		},
		{
			name: "when it has two subjects, it is refused",
			write: func() error {
				return operator.Create(t.Context(), clusterRoleBinding(prefixed, rbac.AuthDelegatorClusterRole, controlPlaneOperator(cp), controlPlaneOperator("kube-system")))
			},
			message: "it must have exactly one subject, ServiceAccount " + cp + "/control-plane-operator, not 2",
		},
		{
			name: "when a cluster-api manager's binding grants the control-plane-operator's role, it is refused",
			write: func() error {
				return operator.Create(t.Context(), clusterRoleBinding(rbac.ClusterAPIBindingPrefix+cp, rbac.AuthDelegatorClusterRole,
					rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: cp, Name: hyperv1.ClusterAPIName}))
			},
			message: "its roleRef must be ClusterRole " + rbac.ClusterAPIClusterRole + ", not ClusterRole " + rbac.AuthDelegatorClusterRole,
		},
		{
			name: "when a cluster-api manager's binding names the control-plane-operator, it is refused",
			write: func() error {
				return operator.Create(t.Context(), clusterRoleBinding(rbac.ClusterAPIBindingPrefix+cp, rbac.ClusterAPIClusterRole, controlPlaneOperator(cp)))
			},
			message: "its subject must be ServiceAccount " + cp + "/cluster-api (the namespace its name says), not ServiceAccount " + cp + "/control-plane-operator",
		},
		{
			name: "when it has no subject, it is refused",
			write: func() error {
				return operator.Create(t.Context(), clusterRoleBinding(prefixed, rbac.AuthDelegatorClusterRole))
			},
			message: "it must have exactly one subject, ServiceAccount " + cp + "/control-plane-operator, not 0",
		},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.write()
			if err == nil {
				// Let the next case start from the same cluster.
				_ = env.Client.Delete(t.Context(), clusterRoleBinding(prefixed, ""))
			}
			t.Logf("%v", err)
			if !apierrors.IsForbidden(err) {
				t.Fatalf("want 403 Forbidden, got %v", err)
			}
			if tt.message != "" && (!strings.Contains(err.Error(), rbac.ClusterRoleBindingPolicyName) || !strings.Contains(err.Error(), tt.message)) {
				t.Fatalf("want the policy's refusal saying %q, got %v", tt.message, err)
			}
		})
	}
	for _, name := range []string{"cluster-admin", foreign.Name} {
		if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &rbacv1.ClusterRoleBinding{}); err != nil {
			t.Errorf("ClusterRoleBinding %s is gone after the refused writes: %v", name, err)
		}
	}

	hc := &hyperv1.HostedCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: "demo"}}
	for _, want := range []*rbacv1.ClusterRoleBinding{
		render.ControlPlaneOperatorAuthDelegator(render.Inputs{HostedCluster: hc}),
		render.ClusterAPIClusterRoleBinding(render.Inputs{HostedCluster: hc}),
	} {
		t.Run("when it writes the binding "+want.Name+" it manages, it is allowed", func(t *testing.T) {
			testManagedBinding(t, operator, want)
		})
	}
}

// testManagedBinding writes, as the operator, a binding it manages: a
// create, a patch and a delete are allowed.
func testManagedBinding(t *testing.T, operator client.Client, want *rbacv1.ClusterRoleBinding) {
	if err := operator.Create(t.Context(), want.DeepCopy()); err != nil {
		t.Fatalf("create: %v", err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(t.Context(), want) })
	patch := client.MergeFrom(want.DeepCopy())
	updated := want.DeepCopy()
	updated.Labels["probe"] = "true"
	if err := operator.Patch(t.Context(), updated, patch); err != nil {
		t.Fatalf("patch: %v", err)
	}
	if err := operator.Delete(t.Context(), want.DeepCopy()); err != nil {
		t.Fatalf("delete: %v", err)
	}
}
