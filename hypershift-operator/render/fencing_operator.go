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
// The objects of a shard outside control-plane namespaces (HostedClusters,
// NodePools, EtcdBackups and the admin kubeconfig copies, in namespaces
// that hold clusters of every shard) carry the label themselves, set in
// the operator's first write of each (the finalizer), and a second policy
// bound per shard by object selector judges them (OperatorObjectFencingPolicy).
//
// What it does not judge: the operator's other writes outside
// control-plane namespaces (Events, an etcd restore's objects in the
// HostedCluster's namespace, cluster-scoped objects), which its shard
// queues alone keep to the shard's holder; and a missing shard Lease allows
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
	return operatorFencingPolicy(OperatorFencingPolicyName, operatorNamespace, serviceAccount, "'namespace ' + request.namespace", &admissionregistrationv1.MatchResources{
		// Namespaced only, as FencingPolicy's; Leases included: the
		// operator's own are in its namespace, which is not a
		// control-plane namespace, and a control-plane-operator's
		// (created, and handed over by the lease arbiter) belong to the
		// shard.
		ResourceRules:     namespacedWrites(),
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{hyperv1.HostedControlPlaneLabel: "true"}},
	})
}

// OperatorObjectFencingPolicyName names the policy for the objects of a
// shard outside control-plane namespaces.
const OperatorObjectFencingPolicyName = "hypershift-operator-shard-object-fencing.hypershift.openshift.io"

// OperatorObjectFencingPolicy judges, by the same rule, the writes of the
// operator's ServiceAccount to the objects of a shard in the HostedClusters'
// own namespaces: the HostedClusters, NodePools and EtcdBackups, and the
// admin kubeconfig copies, which carry OperatorShardLabel themselves
// (SetOperatorShard) since a namespace can hold clusters of every shard.
// Only objects with the label are matched, and only of those kinds, so that
// other writes on the management cluster pay for no binding.
func OperatorObjectFencingPolicy(operatorNamespace, serviceAccount string) *admissionregistrationv1.ValidatingAdmissionPolicy {
	return operatorFencingPolicy(OperatorObjectFencingPolicyName, operatorNamespace, serviceAccount, "request.resource.resource + ' ' + request.namespace + '/' + request.name", &admissionregistrationv1.MatchResources{
		ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{
			{RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: writeOperations, Rule: admissionregistrationv1.Rule{
				APIGroups: []string{hyperv1.GroupVersion.Group}, APIVersions: []string{"*"},
				Resources: []string{"hostedclusters", "hostedclusters/status", "nodepools", "nodepools/status", "etcdbackups", "etcdbackups/status"},
			}}},
			{RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: writeOperations, Rule: admissionregistrationv1.Rule{
				APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"secrets"},
			}}},
		},
		ObjectSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: hyperv1.OperatorShardLabel, Operator: metav1.LabelSelectorOpExists}}},
	})
}

// operatorFencingPolicy is a policy, whose param is a shard Lease, that
// refuses the writes constraints match by the operator's ServiceAccount
// unless the writing pod holds the Lease; what (a CEL string) names what
// was written, for the message.
func operatorFencingPolicy(name, operatorNamespace, serviceAccount, what string, constraints *admissionregistrationv1.MatchResources) *admissionregistrationv1.ValidatingAdmissionPolicy {
	writer := admissionregistrationv1.MatchCondition{
		Name:       "hypershift-operator",
		Expression: fmt.Sprintf("request.userInfo.username == 'system:serviceaccount:%s:%s'", operatorNamespace, serviceAccount),
	}
	return leasePolicy(name, constraints, writer, podHoldsLease, fencingMessage(OperatorFencingMessageMarker, what))
}

// OperatorShardBindingNames names the bindings of shard i: of the
// control-plane namespaces, and of the objects.
func OperatorShardBindingNames(i int) []string {
	return []string{
		fmt.Sprintf("hypershift-operator-shard-%d-fencing.hypershift.openshift.io", i),
		fmt.Sprintf("hypershift-operator-shard-%d-object-fencing.hypershift.openshift.io", i),
	}
}

// OperatorShardBindings bind, with Lease <operatorNamespace>/<leaseName>
// (shard i's) as their param, the shard fencing policy to the control-plane
// namespaces labelled OperatorShardLabel shardLabel ("<i>-of-<count>"), and
// the object fencing policy to the objects so labelled.
func OperatorShardBindings(i int, shardLabel, operatorNamespace, leaseName string) []*admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	names := OperatorShardBindingNames(i)
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{hyperv1.OperatorShardLabel: shardLabel}}
	namespaces := operatorShardBinding(names[0], OperatorFencingPolicyName, operatorNamespace, leaseName)
	namespaces.Spec.MatchResources = &admissionregistrationv1.MatchResources{NamespaceSelector: selector}
	objects := operatorShardBinding(names[1], OperatorObjectFencingPolicyName, operatorNamespace, leaseName)
	objects.Spec.MatchResources = &admissionregistrationv1.MatchResources{ObjectSelector: selector.DeepCopy()}
	return []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{namespaces, objects}
}

// operatorShardBinding binds policy with Lease
// <operatorNamespace>/<leaseName> as its param, to what the caller selects.
func operatorShardBinding(name, policy, operatorNamespace, leaseName string) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: policy,
			ParamRef: &admissionregistrationv1.ParamRef{
				Name:                    leaseName,
				Namespace:               operatorNamespace,
				ParameterNotFoundAction: ptr.To(admissionregistrationv1.AllowAction),
			},
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
}

// OperatorShardDiffers reports whether obj's OperatorShardLabel is not
// shard (present when shard is "", absent or another otherwise): whether
// SetOperatorShard would change it. It reads, it copies nothing.
func OperatorShardDiffers(obj metav1.Object, shard string) bool {
	got, ok := obj.GetLabels()[hyperv1.OperatorShardLabel]
	return got != shard || ok != (shard != "")
}

// SetOperatorShard sets obj's OperatorShardLabel to shard, or removes it
// when shard is "", and reports whether it changed anything.
func SetOperatorShard(obj metav1.Object, shard string) bool {
	if !OperatorShardDiffers(obj, shard) {
		return false
	}
	labels := obj.GetLabels()
	if shard == "" {
		delete(labels, hyperv1.OperatorShardLabel)
		obj.SetLabels(labels)
		return true
	}
	if labels == nil {
		labels = map[string]string{}
	}
	labels[hyperv1.OperatorShardLabel] = shard
	obj.SetLabels(labels)
	return true
}
