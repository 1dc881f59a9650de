package hostedcluster_test

import (
	"fmt"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/rbac"
	"github.com/hypershift-le/hypershift/hypershift-operator/render"
	"github.com/hypershift-le/hypershift/support/testutil"
)

// TestAuthDelegatorBinding: the HO binds system:auth-delegator to each
// CPO's ServiceAccount, for its authorized metrics, with its own
// ClusterRole's rights alone, and the teardown removes the binding, which
// the namespace's deletion would leave behind.
func TestAuthDelegatorBinding(t *testing.T) {
	startOperator(t, nil)
	c := newCluster(t, "4.17.0", nil)
	ns := c.controlPlaneNamespace()
	key := client.ObjectKey{Name: render.AuthDelegatorBindingName(ns)}
	binding := &rbacv1.ClusterRoleBinding{}
	testutil.Eventually(t, converge, func() error { return env.Client.Get(t.Context(), key, binding) })
	if binding.RoleRef.Name != rbac.AuthDelegatorClusterRole || len(binding.Subjects) != 1 ||
		binding.Subjects[0].Kind != rbacv1.ServiceAccountKind || binding.Subjects[0].Namespace != ns || binding.Subjects[0].Name != hyperv1.ControlPlaneOperatorName {
		t.Fatalf("binding %s grants %s to %v, want %s to ServiceAccount %s/%s", key.Name, binding.RoleRef.Name, binding.Subjects, rbac.AuthDelegatorClusterRole, ns, hyperv1.ControlPlaneOperatorName)
	}

	if err := env.Client.Delete(t.Context(), c.get(t)); err != nil {
		t.Fatal(err)
	}
	awaitGone(t, c)
	testutil.Eventually(t, converge, func() error {
		if err := env.Client.Get(t.Context(), key, &rbacv1.ClusterRoleBinding{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("ClusterRoleBinding %s outlives its cluster (get: %v)", key.Name, err)
		}
		return nil
	})
}
