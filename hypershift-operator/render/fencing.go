package render

import (
	"fmt"
	"strings"

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
// a Lease, and one binding, whose paramRef names the CPO Lease and leaves
// the namespace to the request's, selecting the namespaces labelled
// hypershift.openshift.io/leader-fencing (LeaderFencingLabel). One policy
// keeps the rule in one place (a fix reaches every cluster at once); one
// binding keeps what the API server pays per write flat: it matches every
// binding of a policy against every request the policy matches, parsing
// each binding's selector again (3.5-7 us a binding, make bench-scale),
// so a binding per namespace made every write in a control-plane namespace
// cost 7 ms more at 1,000 hosted clusters. The label keeps the switch per
// HostedCluster: the hypershift-operator sets it on the control-plane
// namespaces it fences and drops it from those it does not (fencing
// disabled), and reports each cluster's fence in its status.
//
// Versions before bound the policy once per control-plane namespace
// (NamespaceFencingBinding); the hypershift-operator deletes such a binding
// once it has seen the fence hold with the shared one in place.
//
// What the policy decides, for a create, update or delete of anything but a
// Lease, by the user system:serviceaccount:<ns>:control-plane-operator in
// <ns>, a namespace labelled hypershift.openshift.io/hosted-control-plane
// (every control-plane namespace; writes elsewhere are not its business):
//   - allowed when the token's pod name (user.extra
//     authentication.kubernetes.io/pod-name, which only a pod-bound token
//     carries) equals the Lease's spec.holderIdentity;
//   - denied otherwise, with a message naming the holder and the refused pod;
//   - denied when the Lease has no holder (it was released, or the HO just
//     created it): nobody writes until a pod has taken the Lease, which is
//     itself always allowed, so the next leader is never locked out and no
//     non-holder gets through;
//   - not judged when the Lease does not exist (parameterNotFoundAction:
//     Allow). The API server resolves the param before it evaluates match
//     conditions, so Deny would refuse every write in the namespace, by
//     anyone: the namespace controller, the garbage collector, the
//     Deployment controller and an administrator alike, and a namespace
//     deleted by hand would stay Terminating for good.
//
// A missing Lease must therefore never happen while a CPO pod can run, and
// the guard (LeaseGuardPolicy) sees to it: the HO creates the Lease before
// the binding and the CPO Deployment, and the guard refuses to delete it,
// to anyone, unless its namespace is being deleted. In a namespace being
// deleted, the namespace controller removes the Lease among everything
// else; from then on the guard lets the CPO's ServiceAccount only delete
// objects and finalize its HostedControlPlane (creates are refused there by
// the API server's NamespaceLifecycle anyway), so a deposed CPO cannot
// change anything that outlives the namespace.
//
// Admission CEL has no clock, so expiry is not the policy's business:
// another pod must first take the Lease before it may write.
const (
	// FencingPolicyName names the cluster-scoped policy.
	FencingPolicyName = "control-plane-operator-fencing.hypershift.openshift.io"
	// FencingMessageMarker starts every denial's message.
	FencingMessageMarker = hyperv1.FencingDenialPrefix
	// PodNameExtra is the user-info extra in which a pod-bound token
	// carries its pod's name.
	PodNameExtra = "authentication.kubernetes.io/pod-name"
)

// podNameExpression is the writing pod's name, for messages.
var podNameExpression = fmt.Sprintf("(has(request.userInfo.extra) && '%[1]s' in request.userInfo.extra && size(request.userInfo.extra['%[1]s']) > 0 ? request.userInfo.extra['%[1]s'][0] : '<no pod name in token>')", PodNameExtra)

// podHoldsLease is true when the writing pod's name (in its pod-bound
// token) is the holder of the param Lease, which has one.
var podHoldsLease = fmt.Sprintf("has(request.userInfo.extra) && '%[1]s' in request.userInfo.extra && size(request.userInfo.extra['%[1]s']) > 0 && has(params.spec.holderIdentity) && params.spec.holderIdentity != '' && params.spec.holderIdentity == request.userInfo.extra['%[1]s'][0]", PodNameExtra)

// leaseHolderExpression is the param Lease's holder, for messages.
const leaseHolderExpression = "(has(params.spec.holderIdentity) && params.spec.holderIdentity != '' ? params.spec.holderIdentity : '" + noHolder + "')"

// FencingPolicy is the one policy every control-plane namespace binds.
func FencingPolicy() *admissionregistrationv1.ValidatingAdmissionPolicy {
	return leaderFencingPolicy(FencingPolicyName, hyperv1.ControlPlaneOperatorName, podHoldsLease, FencingMessageMarker)
}

// leaderFencingPolicy is a policy, whose param is a Lease, that refuses
// namespaced writes by the ServiceAccount serviceAccount of the request's
// namespace unless holds (a CEL expression over the request and the Lease)
// is true; its denials start with marker and name the writing pod and the
// holder.
func leaderFencingPolicy(name, serviceAccount, holds, marker string) *admissionregistrationv1.ValidatingAdmissionPolicy {
	constraints := &admissionregistrationv1.MatchResources{
		// Namespaced only: a binding whose paramRef takes the request's
		// namespace cannot judge cluster-scoped objects, and a Service
		// create makes one (its IPAddress) under the creator's identity.
		ResourceRules: namespacedWrites(),
		// Only control-plane namespaces: the API server matches a
		// policy's constraints once per request, and only then each of
		// its bindings (each selector parsed again per request: 3.5-7 us
		// a binding, make bench-scale, which the per-namespace bindings
		// of earlier versions multiplied by the hosted clusters), so that
		// writes elsewhere on the management cluster pay for none.
		// The HO keeps the label on the namespaces it owns; the CPO's and
		// cluster-api's Roles cannot change Namespaces.
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{hyperv1.HostedControlPlaneLabel: "true"}},
		// Lease operations stay allowed, or no one could ever acquire (or
		// release) it.
		ExcludeResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{"coordination.k8s.io"}, APIVersions: []string{"*"}, Resources: []string{"leases"}},
		}}},
	}
	writer := admissionregistrationv1.MatchCondition{
		Name:       serviceAccount,
		Expression: "request.namespace != '' && request.userInfo.username == 'system:serviceaccount:' + request.namespace + ':" + serviceAccount + "'",
	}
	return leasePolicy(name, constraints, writer, holds, fencingMessage(marker, ""))
}

// writeOperations are the operations a fencing policy judges.
var writeOperations = []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete}

// namespacedWrites matches every write of a namespaced object.
func namespacedWrites() []admissionregistrationv1.NamedRuleWithOperations {
	return []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
		Operations: writeOperations,
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*/*"}, Scope: ptr.To(admissionregistrationv1.NamespacedScope)},
	}}}
}

// leasePolicy is the shape of every fencing policy: its param a Lease, it
// refuses, with message (a CEL string expression), the writes constraints
// and writer match unless holds (CEL over the request and the Lease).
func leasePolicy(name string, constraints *admissionregistrationv1.MatchResources, writer admissionregistrationv1.MatchCondition, holds, message string) *admissionregistrationv1.ValidatingAdmissionPolicy {
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    ptr.To(admissionregistrationv1.Fail),
			ParamKind:        &admissionregistrationv1.ParamKind{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"},
			MatchConstraints: constraints,
			MatchConditions:  []admissionregistrationv1.MatchCondition{writer},
			Validations: []admissionregistrationv1.Validation{{
				Expression:        holds,
				MessageExpression: message,
				Reason:            ptr.To(metav1.StatusReasonForbidden),
			}},
		},
	}
}

// fencingMessage is a fencing denial: it starts with marker and names the
// writing pod, the Lease, what the Lease is the shard of (shardOf, a CEL
// string expression; "" for none) and its holder, in the form FencedHolder
// reads.
func fencingMessage(marker, shardOf string) string {
	message := "'" + marker + " ' + " + podNameExpression + " + ' does not hold Lease ' + params.metadata.namespace + '/' + params.metadata.name + "
	if shardOf != "" {
		message += "' of the shard ' + " + shardOf + " + ' belongs to"
	} else {
		message += "'"
	}
	return message + " (holder: ' + " + leaseHolderExpression + " + '); only the holder may write'"
}

// FencedHolder reads, from the message of a write the fencing policy
// refused, the holder the API server judged against ("" for none).
func FencedHolder(message string) (string, bool) {
	const start, end = " (holder: ", "); only the holder may write"
	i := strings.Index(message, FencingMessageMarker)
	if i < 0 {
		return "", false
	}
	rest := message[i:]
	j := strings.Index(rest, start)
	k := strings.LastIndex(rest, end)
	if j < 0 || k < j {
		return "", false
	}
	holder := rest[j+len(start) : k]
	if holder == noHolder {
		holder = ""
	}
	return holder, true
}

// noHolder stands for an empty holder in denial messages.
const noHolder = "<none>"

// FencingBindingName names the binding of the fencing policy to every
// fenced control-plane namespace.
const FencingBindingName = FencingPolicyName

// LeaderFencingLabel marks the control-plane namespaces the fencing
// bindings select (hyperv1.LeaderFencingLabel).
const LeaderFencingLabel = hyperv1.LeaderFencingLabel

// FencingBinding binds the fencing policy to every namespace labelled
// LeaderFencingLabel, with the CPO Lease of the request's namespace as its
// param.
func FencingBinding() *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return leaderFencingBinding(FencingBindingName, FencingPolicyName, hyperv1.ControlPlaneOperatorLeaseName,
		map[string]string{LeaderFencingLabel: "true"}, nil)
}

// NamespaceFencingBindingName names the binding of the fencing policy to
// namespace alone.
func NamespaceFencingBindingName(namespace string) string {
	return "control-plane-operator-fencing." + namespace
}

// NamespaceFencingBinding binds the fencing policy to namespace ns alone,
// annotated with the HostedCluster key it serves: what versions before the
// shared binding applied per control-plane namespace (the
// hypershift-operator deletes those it finds), and what tests use to fence
// a namespace by itself.
func NamespaceFencingBinding(ns, clusterKey string) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return leaderFencingBinding(NamespaceFencingBindingName(ns), FencingPolicyName, hyperv1.ControlPlaneOperatorLeaseName,
		map[string]string{"kubernetes.io/metadata.name": ns}, map[string]string{hyperv1.ClusterAnnotation: clusterKey})
}

// leaderFencingBinding binds policy to the namespaces whose labels match
// namespaceLabels, with the Lease leaseName of the request's namespace as
// its param.
func leaderFencingBinding(name, policy, leaseName string, namespaceLabels, annotations map[string]string) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: annotations,
		},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: policy,
			ParamRef: &admissionregistrationv1.ParamRef{
				Name:                    leaseName,
				ParameterNotFoundAction: ptr.To(admissionregistrationv1.AllowAction),
			},
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: namespaceLabels},
			},
		},
	}
}

// LeaseGuardPolicyName names the cluster-scoped policy that keeps the
// fencing policy's param in place.
const LeaseGuardPolicyName = "control-plane-operator-lease-guard.hypershift.openshift.io"

// LeaseGuardPolicy refuses, in control-plane namespaces, what would leave a
// control-plane-operator, or a cluster-api manager, unfenced (see the
// fencing comment above, and ClusterAPIFencingPolicy):
//   - deleting the CPO Lease, or the cluster-api manager's, while its
//     namespace is not being deleted, by anyone: the Lease goes with its
//     namespace, that is, with its HostedCluster;
//   - any write by the CPO's ServiceAccount in a namespace being deleted,
//     other than a delete, a Lease operation or an update of its
//     HostedControlPlane (removing its finalizer).
//
// It has no param, so nothing it needs can go missing.
func LeaseGuardPolicy() *admissionregistrationv1.ValidatingAdmissionPolicy {
	lease := "request.resource.group == 'coordination.k8s.io' && request.resource.resource == 'leases'"
	terminating := "has(namespaceObject.metadata.deletionTimestamp)"
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: LeaseGuardPolicyName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*/*"}, Scope: ptr.To(admissionregistrationv1.NamespacedScope)},
				}}},
			},
			Validations: []admissionregistrationv1.Validation{
				{
					Expression: "!(" + lease + " && request.operation == 'DELETE' && request.name in ['" + hyperv1.ControlPlaneOperatorLeaseName + "', '" + hyperv1.ClusterAPILeaseName + "']) || " + terminating,
					MessageExpression: "'Lease ' + request.name + ' is the param of a fencing policy: it is deleted only with its control-plane namespace " +
						"(delete the HostedCluster, or the namespace)'",
					Reason: ptr.To(metav1.StatusReasonForbidden),
				},
				{
					Expression: "!(" + terminating + " && request.userInfo.username == 'system:serviceaccount:' + request.namespace + ':" + hyperv1.ControlPlaneOperatorName + "') || " +
						"request.operation == 'DELETE' || (" + lease + ") || " +
						"(request.resource.group == '" + hyperv1.GroupVersion.Group + "' && request.resource.resource == 'hostedcontrolplanes')",
					MessageExpression: "'" + FencingMessageMarker + " ' + " + podNameExpression + " + ' may not write in namespace ' + request.namespace + ', which is being deleted: a control-plane-operator may only delete objects and finalize its HostedControlPlane there'",
					Reason:            ptr.To(metav1.StatusReasonForbidden),
				},
			},
		},
	}
}

// LeaseGuardBinding binds the guard to every control-plane namespace.
func LeaseGuardBinding() *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: LeaseGuardPolicyName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        LeaseGuardPolicyName,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{hyperv1.HostedControlPlaneLabel: "true"}},
			},
		},
	}
}

// The API server keeps one informer per param kind for its admission
// policies, and on Kubernetes 1.37 stops it for good the moment no policy
// of that param kind has a binding; a policy bound later reads the stopped
// informer, whose copy of a Lease never changes again
// (kubernetes/kubernetes#130887 and #133827, fix proposed in #141015). A
// Lease still in that copy is used as it was: a HostedCluster re-created
// under the same name, or any handover after the fencing policy was
// deleted and re-created, would be fenced against a holder long gone. Only
// an API server restart clears it.
//
// The rule that keeps it from happening: while the hypershift-operator is
// installed, policies with a Lease param each keep a binding, so the
// informer is never without a user. One is the fencing policy itself, bound
// also to the operator's own namespace with the operator's own Lease as its
// param (that namespace is not a control-plane namespace, so it judges
// nothing); another is KeepAlivePolicy, which exists only for this; the
// cluster-api fencing policy, whose shared binding exists whether or not a
// cluster of platform Pod does, is a third. Deleting one of them leaves the
// others; the operator re-creates it within moments.

// KeepAliveName names the keep-alive policy and the bindings that keep the
// Lease param informer alive.
const KeepAliveName = "lease-param-keepalive.hypershift.openshift.io"

// KeepAlivePolicy is a policy with a Lease param that allows everything.
func KeepAlivePolicy() *admissionregistrationv1.ValidatingAdmissionPolicy {
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: KeepAliveName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Ignore),
			ParamKind:     &admissionregistrationv1.ParamKind{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"},
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Delete},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"coordination.k8s.io"}, APIVersions: []string{"v1"}, Resources: []string{"leases"}},
				}}},
			},
			Validations: []admissionregistrationv1.Validation{{
				Expression: "true",
				Message:    "never refused: this policy exists to keep the API server's Lease param informer alive",
			}},
		},
	}
}

// KeepAliveBindings bind the keep-alive policy and the fencing policy to the
// operator's namespace, with the operator's Lease as their param.
func KeepAliveBindings(operatorNamespace string) []*admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	bind := func(name, policy string) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
		return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicyBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
				PolicyName: policy,
				ParamRef: &admissionregistrationv1.ParamRef{
					Name:                    hyperv1.HypershiftOperatorLeaseName,
					Namespace:               operatorNamespace,
					ParameterNotFoundAction: ptr.To(admissionregistrationv1.AllowAction),
				},
				ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
				MatchResources: &admissionregistrationv1.MatchResources{
					NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": operatorNamespace}},
				},
			},
		}
	}
	return []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		bind(KeepAliveName, KeepAliveName),
		bind("control-plane-operator-fencing-keepalive.hypershift.openshift.io", FencingPolicyName),
	}
}
