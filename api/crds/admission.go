package crds

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"

	"github.com/hypershift-le/hypershift/support/admission"
)

// NamespaceLengthPolicyName names the ValidatingAdmissionPolicy, and its
// binding, that refuses a HostedCluster whose control-plane namespace name
// would be too long.
const NamespaceLengthPolicyName = "hostedcluster-namespace-length.hypershift.openshift.io"

// NamespaceLengthPolicy returns the policy that refuses to create a
// HostedCluster whose control-plane namespace "<namespace>-<name>" would be
// longer than a namespace name may be.
//
// A CRD's validation rules see only metadata.name and metadata.generateName,
// never metadata.namespace, so the schema can only bound the name alone (see
// the rule on HostedCluster). The policy sees the whole request and checks the
// sum; it needs the ValidatingAdmissionPolicy API (GA since Kubernetes 1.30).
func NamespaceLengthPolicy() (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	controlPlaneNamespace := "object.metadata.namespace + '-' + object.metadata.name.replace('.', '-')"
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: NamespaceLengthPolicyName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: admission.MatchResources(hyperv1.GroupVersion.Group, "hostedclusters", admissionregistrationv1.Create),
			Validations: []admissionregistrationv1.Validation{{
				Expression: fmt.Sprintf("size(%s) <= %d", controlPlaneNamespace, hyperv1.MaxNamespaceLength),
				MessageExpression: fmt.Sprintf(
					"'metadata.name: the control-plane namespace \"' + %[1]s + '\" would be ' + string(size(%[1]s)) + "+
						"' characters long, more than the %[2]d a namespace name may have; use a name of at most ' + "+
						"string(%[2]d - 1 - size(object.metadata.namespace)) + ' characters in namespace ' + object.metadata.namespace",
					controlPlaneNamespace, hyperv1.MaxNamespaceLength),
				Reason: ptr.To(metav1.StatusReasonInvalid),
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: NamespaceLengthPolicyName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        NamespaceLengthPolicyName,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	return policy, binding
}
