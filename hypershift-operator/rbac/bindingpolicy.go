package rbac

import (
	"strconv"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"

	"github.com/hypershift-le/hypershift/support/admission"
)

// AuthDelegatorBindingPrefix starts the name of every ClusterRoleBinding
// the hypershift-operator writes: the auth-delegator binding of one
// control-plane-operator, named after its control-plane namespace.
const AuthDelegatorBindingPrefix = "hypershift-control-plane-operator-"

// ClusterRoleBindingPolicyName names the ValidatingAdmissionPolicy, and its
// binding, that confine the hypershift-operator's ClusterRoleBinding writes.
const ClusterRoleBindingPolicyName = "hypershift-operator-clusterrolebindings.hypershift.openshift.io"

// ServiceAccountUser is the user of the hypershift-operator's ServiceAccount
// in namespace.
func ServiceAccountUser(namespace string) string {
	return "system:serviceaccount:" + namespace + ":" + HypershiftOperatorName
}

// ClusterRoleBindingPolicy returns the policy, and its binding, that let
// user (the hypershift-operator's ServiceAccount) create, update and delete
// only the bindings it manages: named AuthDelegatorBindingPrefix + <ns>,
// binding ClusterRole AuthDelegatorClusterRole, with exactly one subject,
// ServiceAccount <ns>/control-plane-operator.
//
// Its ClusterRole must grant create, patch and delete on every
// ClusterRoleBinding: RBAC cannot narrow create by name, nor anything by a
// name prefix. bind on the one ClusterRole limits what a create or an
// update may grant, but nothing checks a delete, which could remove any
// binding of the cluster, cluster-admin's included. The API server checks
// this policy after RBAC, on every such write, whatever the operator's code
// does. A delete is judged by the binding it would remove.
//
// Admission policies never apply to admission policies and their bindings
// (the API server exempts them), so only RBAC keeps the operator from
// removing this one: see HypershiftOperatorRules.
func ClusterRoleBindingPolicy(user string) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	const (
		binding   = "variables.binding"
		namespace = "variables.controlPlaneNamespace"
		subjects  = "variables.subjects"
		subject   = "variables.subjects[0]"
	)
	// refused starts every message: what was refused, and why it matters.
	refused := "'the hypershift-operator may not ' + variables.verb + ' ClusterRoleBinding ' + " + binding + ".metadata.name + ': '"
	// tail ends every message: what an operator reading it should do.
	tail := "' (an operator that tries this has a bug or is compromised: look at its log and at the audit log for user " + user + ")'"
	cpo := "'ServiceAccount ' + " + namespace + " + '/" + hyperv1.ControlPlaneOperatorName + "'"
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: ClusterRoleBindingPolicyName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: admission.MatchResources(rbacv1.GroupName, "clusterrolebindings",
				admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete),
			MatchConditions: []admissionregistrationv1.MatchCondition{{
				Name:       "hypershift-operator",
				Expression: "request.userInfo.username == '" + user + "'",
			}},
			Variables: []admissionregistrationv1.Variable{
				// A delete has no object: judge the one it would remove.
				{Name: "binding", Expression: "request.operation == 'DELETE' ? oldObject : object"},
				{Name: "verb", Expression: "request.operation == 'CREATE' ? 'create' : request.operation == 'UPDATE' ? 'update' : 'delete'"},
				// The control-plane namespace the name says ("" when the
				// name does not start with the prefix).
				{Name: "controlPlaneNamespace", Expression: binding + ".metadata.name.startsWith('" + AuthDelegatorBindingPrefix + "') ? " +
					binding + ".metadata.name.substring(" + strconv.Itoa(len(AuthDelegatorBindingPrefix)) + ") : ''"},
				{Name: "subjects", Expression: "has(" + binding + ".subjects) ? " + binding + ".subjects : []"},
			},
			Validations: []admissionregistrationv1.Validation{
				{
					Expression: namespace + " != ''",
					MessageExpression: refused + " + 'it writes only the bindings named " + AuthDelegatorBindingPrefix +
						"<control-plane namespace>' + " + tail,
					Reason: ptr.To(metav1.StatusReasonForbidden),
				},
				{
					Expression: binding + ".roleRef.apiGroup == '" + rbacv1.GroupName + "' && " + binding + ".roleRef.kind == 'ClusterRole' && " +
						binding + ".roleRef.name == '" + AuthDelegatorClusterRole + "'",
					MessageExpression: refused + " + 'its roleRef must be ClusterRole " + AuthDelegatorClusterRole + ", not ' + " +
						binding + ".roleRef.kind + ' ' + " + binding + ".roleRef.name + " + tail,
					Reason: ptr.To(metav1.StatusReasonForbidden),
				},
				{
					Expression:        namespace + " == '' || size(" + subjects + ") == 1",
					MessageExpression: refused + " + 'it must have exactly one subject, ' + " + cpo + " + ', not ' + string(size(" + subjects + ")) + " + tail,
					Reason:            ptr.To(metav1.StatusReasonForbidden),
				},
				{
					Expression: namespace + " == '' || size(" + subjects + ") != 1 || (" +
						subject + ".kind == '" + rbacv1.ServiceAccountKind + "' && (!has(" + subject + ".apiGroup) || " + subject + ".apiGroup == '') && " +
						subject + ".name == '" + hyperv1.ControlPlaneOperatorName + "' && has(" + subject + ".namespace) && " + subject + ".namespace == " + namespace + ")",
					MessageExpression: refused + " + 'its subject must be ' + " + cpo + " + ' (the namespace its name says), not ' + " +
						subject + ".kind + ' ' + (has(" + subject + ".namespace) ? " + subject + ".namespace + '/' : '') + " + subject + ".name + " + tail,
					Reason: ptr.To(metav1.StatusReasonForbidden),
				},
			},
		},
	}
	policyBinding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: ClusterRoleBindingPolicyName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        ClusterRoleBindingPolicyName,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	return policy, policyBinding
}
