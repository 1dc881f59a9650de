package rbac

import (
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"

	"github.com/hypershift-le/hypershift/support/admission"
)

// AuthDelegatorBindingPrefix starts the name of the auth-delegator binding
// of one control-plane-operator, named after its control-plane namespace.
const AuthDelegatorBindingPrefix = "hypershift-control-plane-operator-"

// ClusterAPIBindingPrefix starts the name of the binding of one cluster-api
// manager (platform Pod) to ClusterAPIClusterRole, named after its
// control-plane namespace.
const ClusterAPIBindingPrefix = "hypershift-cluster-api-"

// ManagedBinding is a kind of ClusterRoleBinding the hypershift-operator
// writes, one per control-plane namespace: named Prefix + <namespace>,
// binding ClusterRole to the ServiceAccount <namespace>/ServiceAccount.
type ManagedBinding struct {
	Prefix, ClusterRole, ServiceAccount string
}

// ManagedBindings are every ClusterRoleBinding the hypershift-operator
// writes: ClusterRoleBindingPolicy lets it write these and no other.
var ManagedBindings = []ManagedBinding{
	{Prefix: AuthDelegatorBindingPrefix, ClusterRole: AuthDelegatorClusterRole, ServiceAccount: hyperv1.ControlPlaneOperatorName},
	{Prefix: ClusterAPIBindingPrefix, ClusterRole: ClusterAPIClusterRole, ServiceAccount: hyperv1.ClusterAPIName},
}

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
// only the bindings it manages (ManagedBindings): named a managed prefix +
// <ns>, binding that prefix's ClusterRole, with exactly one subject, that
// prefix's ServiceAccount of <ns> (the control-plane-operator's
// auth-delegator binding; the cluster-api manager's).
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
	cpo := "'ServiceAccount ' + " + namespace + " + '/' + variables.serviceAccount"
	var prefixes []string
	for _, m := range ManagedBindings {
		prefixes = append(prefixes, m.Prefix+"<control-plane namespace>")
	}
	prefixLengths := "["
	for i, m := range ManagedBindings {
		if i > 0 {
			prefixLengths += ", "
		}
		prefixLengths += strconv.Itoa(len(m.Prefix))
	}
	prefixLengths += "]"
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
				// The managed binding the name says (its index in
				// ManagedBindings, -1 for none) and its control-plane
				// namespace ("" for none).
				{Name: "kind", Expression: kindExpression(binding)},
				{Name: "controlPlaneNamespace", Expression: "variables.kind < 0 ? '' : " + binding + ".metadata.name.substring(" + prefixLengths + "[variables.kind])"},
				{Name: "clusterRole", Expression: "variables.kind < 0 ? '' : " + stringList(func(m ManagedBinding) string { return m.ClusterRole }) + "[variables.kind]"},
				{Name: "serviceAccount", Expression: "variables.kind < 0 ? '' : " + stringList(func(m ManagedBinding) string { return m.ServiceAccount }) + "[variables.kind]"},
				{Name: "subjects", Expression: "has(" + binding + ".subjects) ? " + binding + ".subjects : []"},
			},
			Validations: []admissionregistrationv1.Validation{
				{
					Expression:        namespace + " != ''",
					MessageExpression: refused + " + 'it writes only the bindings named " + strings.Join(prefixes, " or ") + "' + " + tail,
					Reason:            ptr.To(metav1.StatusReasonForbidden),
				},
				{
					Expression: namespace + " == '' || (" + binding + ".roleRef.apiGroup == '" + rbacv1.GroupName + "' && " + binding + ".roleRef.kind == 'ClusterRole' && " +
						binding + ".roleRef.name == variables.clusterRole)",
					MessageExpression: refused + " + 'its roleRef must be ClusterRole ' + variables.clusterRole + ', not ' + " +
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
						subject + ".name == variables.serviceAccount && has(" + subject + ".namespace) && " + subject + ".namespace == " + namespace + ")",
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

// kindExpression is the index in ManagedBindings of the binding whose name
// starts with its prefix, -1 for none.
func kindExpression(binding string) string {
	expr := "-1"
	for i := len(ManagedBindings) - 1; i >= 0; i-- {
		expr = binding + ".metadata.name.startsWith('" + ManagedBindings[i].Prefix + "') ? " + strconv.Itoa(i) + " : (" + expr + ")"
	}
	return expr
}

// stringList is a CEL list of one field of every managed binding.
func stringList(field func(ManagedBinding) string) string {
	out := make([]string, 0, len(ManagedBindings))
	for _, m := range ManagedBindings {
		out = append(out, "'"+field(m)+"'")
	}
	return "[" + strings.Join(out, ", ") + "]"
}
