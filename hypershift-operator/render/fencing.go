package render

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
)

// Fencing: the API server itself refuses writes by any control-plane-operator
// pod that does not hold its Lease. Client-go leader election gives no
// fencing (a deposed leader's goroutines, or a late request, can still
// write); this closes the gap with built-in machinery, so it does not depend
// on the child behaving.
//
// The design is one cluster-scoped ValidatingAdmissionPolicy, whose param is
// a Lease, and one binding per control-plane namespace, whose paramRef names
// the CPO Lease and leaves the namespace to the request's. One policy keeps
// the rule in one place (a fix reaches every cluster at once); a binding per
// namespace lets the hypershift-operator switch fencing per HostedCluster,
// report it in that cluster's status, and remove it with the cluster.
//
// What the policy decides, for a create, update or delete of anything but a
// Lease, by the user system:serviceaccount:<ns>:control-plane-operator in
// <ns>:
//   - allowed when the token's pod name (user.extra
//     authentication.kubernetes.io/pod-name, which only a pod-bound token
//     carries) equals the Lease's spec.holderIdentity;
//   - denied otherwise, with a message naming the holder and the refused pod;
//   - denied when the Lease has no holder (it was released, or the HO just
//     created it): nobody writes until a pod has taken the Lease, which is
//     itself always allowed, so the next leader is never locked out and no
//     non-holder gets through;
//   - denied when the Lease does not exist (parameterNotFoundAction: Deny).
//     The API server resolves the param before it evaluates match
//     conditions, so a missing Lease refuses every write in the namespace,
//     by anyone: the HO therefore creates the Lease, empty, before it binds
//     the policy, re-creates it if it is deleted, and removes the binding
//     before it deletes the namespace.
//
// Admission CEL has no clock, so expiry is not the policy's business:
// another pod must first take the Lease before it may write.
const (
	// FencingPolicyName names the cluster-scoped policy.
	FencingPolicyName = "control-plane-operator-fencing.hypershift.openshift.io"
	// FencingMessageMarker starts every denial's message.
	FencingMessageMarker = hyperv1.FencingDenialPrefix
	podNameExtra         = "authentication.kubernetes.io/pod-name"
)

// FencingPolicy is the one policy every control-plane namespace binds.
func FencingPolicy() *admissionregistrationv1.ValidatingAdmissionPolicy {
	pod := fmt.Sprintf("(has(request.userInfo.extra) && '%[1]s' in request.userInfo.extra && size(request.userInfo.extra['%[1]s']) > 0 ? request.userInfo.extra['%[1]s'][0] : '<no pod name in token>')", podNameExtra)
	holder := "(has(params.spec.holderIdentity) && params.spec.holderIdentity != '' ? params.spec.holderIdentity : '<none>')"
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: FencingPolicyName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			ParamKind:     &admissionregistrationv1.ParamKind{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"},
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete},
					// Namespaced only: a binding whose paramRef takes the
					// request's namespace cannot judge cluster-scoped objects,
					// and a Service create makes one (its IPAddress) under the
					// creator's identity.
					Rule: admissionregistrationv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*/*"}, Scope: ptr.To(admissionregistrationv1.NamespacedScope)},
				}}},
				// Lease operations stay allowed, or no one could ever acquire
				// (or release) it.
				ExcludeResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"coordination.k8s.io"}, APIVersions: []string{"*"}, Resources: []string{"leases"}},
				}}},
			},
			MatchConditions: []admissionregistrationv1.MatchCondition{{
				Name:       "control-plane-operator",
				Expression: "request.namespace != '' && request.userInfo.username == 'system:serviceaccount:' + request.namespace + ':" + hyperv1.ControlPlaneOperatorName + "'",
			}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: fmt.Sprintf("has(request.userInfo.extra) && '%[1]s' in request.userInfo.extra && size(request.userInfo.extra['%[1]s']) > 0 && has(params.spec.holderIdentity) && params.spec.holderIdentity != '' && params.spec.holderIdentity == request.userInfo.extra['%[1]s'][0]", podNameExtra),
				MessageExpression: "'" + FencingMessageMarker + " ' + " + pod + " + ' does not hold Lease ' + params.metadata.namespace + '/' + params.metadata.name + " +
					"' (holder: ' + " + holder + " + '); only the holder may write'",
				Reason: ptr.To(metav1.StatusReasonForbidden),
			}},
		},
	}
}

// FencingBindingName names the binding of one control-plane namespace.
func FencingBindingName(namespace string) string {
	return "control-plane-operator-fencing." + namespace
}

// FencingBinding binds the policy to the control-plane namespace, with the
// CPO Lease of the request's namespace as its param.
func FencingBinding(in Inputs) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return FencingBindingFor(in.Namespace(), ClusterKey(in.HostedCluster))
}

// FencingBindingFor binds the policy to namespace ns, annotated with the
// HostedCluster key it serves.
func FencingBindingFor(ns, clusterKey string) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        FencingBindingName(ns),
			Annotations: map[string]string{hyperv1.ClusterAnnotation: clusterKey},
		},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: FencingPolicyName,
			ParamRef: &admissionregistrationv1.ParamRef{
				Name:                    hyperv1.ControlPlaneOperatorLeaseName,
				ParameterNotFoundAction: ptr.To(admissionregistrationv1.DenyAction),
			},
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
			},
		},
	}
}
