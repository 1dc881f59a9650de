package render

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
)

// Shard fencing: with --shards above 1, the API server refuses the
// hypershift-operator's writes in a control-plane namespace unless the
// writing pod holds the Lease of the shard that namespace belongs to, by
// the same rule that fences a control-plane-operator by its own Lease
// (see FencingPolicy): a replica that lost a shard, whose late requests or
// still-running goroutines would otherwise write on, is refused as soon
// as another replica has taken the shard's Lease.
//
// One policy, whose param is a Lease, judges the writes of the operator's
// ServiceAccount (matched by name: it runs in one namespace); one binding
// per shard i names the Lease of shard i in the operator's namespace as its
// param and selects the control-plane namespaces labelled
// OperatorShardLabel "<i>-of-<count>". The HostedCluster controller of a
// shard sets that label on its namespaces (render.Namespace with
// Inputs.OperatorShard) in its first write there, and the namespace is
// cluster-scoped, so that write is never judged: a namespace moves to its
// new shard's binding when the new holder first reconciles it. The count
// in the label keeps a namespace labelled under another count out of
// every binding of this one, rather than judged against a Lease whose
// shard means other HostedClusters now.
//
// What it does not judge: the operator's writes outside control-plane
// namespaces (the HostedClusters, NodePools and EtcdBackups in their own
// namespaces, and cluster-scoped objects), which its shard queues alone
// keep to the shard's holder; and a missing shard Lease allows
// (parameterNotFoundAction: Allow), for the reason FencingPolicy gives:
// Deny would refuse every write in the namespace, by anyone. The operator
// creates a shard's Lease when it first campaigns for it, before any
// controller of the shard runs.
const (
	// OperatorFencingPolicyName names the policy.
	OperatorFencingPolicyName = "hypershift-operator-shard-fencing.hypershift.openshift.io"
	// OperatorFencingMessageMarker starts every denial's message.
	OperatorFencingMessageMarker = hyperv1.OperatorFencingDenialPrefix
)

// OperatorFencingPolicy judges the writes of ServiceAccount
// <operatorNamespace>/<serviceAccount> in control-plane namespaces against
// the shard Lease a binding gives it.
func OperatorFencingPolicy(operatorNamespace, serviceAccount string) *admissionregistrationv1.ValidatingAdmissionPolicy {
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: OperatorFencingPolicyName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			ParamKind:     &admissionregistrationv1.ParamKind{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"},
			MatchConstraints: &admissionregistrationv1.MatchResources{
				// Namespaced only, as FencingPolicy's; Leases included:
				// the operator's own are in its namespace, which is not a
				// control-plane namespace, and a control-plane-operator's
				// (created, and handed over by the lease arbiter) belong
				// to the shard.
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*/*"}, Scope: ptr.To(admissionregistrationv1.NamespacedScope)},
				}}},
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{hyperv1.HostedControlPlaneLabel: "true"}},
			},
			MatchConditions: []admissionregistrationv1.MatchCondition{{
				Name:       "hypershift-operator",
				Expression: fmt.Sprintf("request.userInfo.username == 'system:serviceaccount:%s:%s'", operatorNamespace, serviceAccount),
			}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: podHoldsLease,
				MessageExpression: "'" + OperatorFencingMessageMarker + " ' + " + podNameExpression + " + ' does not hold Lease ' + params.metadata.namespace + '/' + params.metadata.name + " +
					"' of the shard namespace ' + request.namespace + ' belongs to (holder: ' + " + leaseHolderExpression + " + '); only the holder may write'",
				Reason: ptr.To(metav1.StatusReasonForbidden),
			}},
		},
	}
}

// OperatorShardBindingName names the binding of shard i.
func OperatorShardBindingName(i int) string {
	return fmt.Sprintf("hypershift-operator-shard-%d-fencing.hypershift.openshift.io", i)
}

// OperatorShardBinding binds the shard fencing policy, with Lease
// <operatorNamespace>/<leaseName> as its param, to the control-plane
// namespaces labelled OperatorShardLabel shardLabel ("<i>-of-<count>").
func OperatorShardBinding(i int, shardLabel, operatorNamespace, leaseName string) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: OperatorShardBindingName(i)},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: OperatorFencingPolicyName,
			ParamRef: &admissionregistrationv1.ParamRef{
				Name:                    leaseName,
				Namespace:               operatorNamespace,
				ParameterNotFoundAction: ptr.To(admissionregistrationv1.AllowAction),
			},
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{hyperv1.OperatorShardLabel: shardLabel}},
			},
		},
	}
}
