package render

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/rbac"
)

// ControlPlaneNamespaceLabel names, on the cluster-scoped objects the
// hypershift-operator creates for a HostedCluster, its control-plane
// namespace; the operator watches those objects, and no others of their
// kind, by it.
const ControlPlaneNamespaceLabel = "hypershift.openshift.io/control-plane-namespace"

// AuthDelegatorBindingName names the ClusterRoleBinding of the
// control-plane-operator of control-plane namespace ns.
func AuthDelegatorBindingName(ns string) string {
	return rbac.AuthDelegatorBindingPrefix + ns
}

// ControlPlaneOperatorAuthDelegator binds system:auth-delegator to the
// CPO's ServiceAccount, so that the CPO can authenticate and authorize who
// scrapes its metrics (metricsserving.Options.Secure). TokenReviews and
// SubjectAccessReviews are cluster-scoped: a RoleBinding cannot grant
// them, and the namespace's deletion does not remove this binding (the
// teardown does).
func ControlPlaneOperatorAuthDelegator(in Inputs) *rbacv1.ClusterRoleBinding {
	meta := in.objectMeta(AuthDelegatorBindingName(in.Namespace()))
	meta.Namespace = ""
	meta.Labels = map[string]string{ControlPlaneNamespaceLabel: in.Namespace()}
	return &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
		ObjectMeta: meta,
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: rbac.AuthDelegatorClusterRole},
		Subjects: []rbacv1.Subject{{
			Kind: rbacv1.ServiceAccountKind, Namespace: in.Namespace(), Name: hyperv1.ControlPlaneOperatorName,
		}},
	}
}
