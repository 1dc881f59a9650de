package render

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
)

// The cluster-api manager of a HostedCluster of platform Pod is fenced as
// the control-plane-operator is: a policy of its own, whose param is the
// manager's Lease, bound (as the CPO's) to every fenced control-plane
// namespace; the Lease exists before the manager's Deployment and the Lease guard keeps it there (see
// the fencing comment in fencing.go).
//
// One difference: cluster-api's manager is elected by controller-runtime,
// whose holder identity is the pod's hostname (its name) followed by "_"
// and a random UUID, so the policy admits the pod whose name, with "_",
// starts the holder identity. A pod name has no "_", so no other pod's
// name can be read out of a holder identity this way.
//
// What it leaves out: writes in the hosted cluster (a drain, a Node's
// deletion) go to the hosted kube-apiserver, which knows no Lease of the
// management cluster; there the manager's own election is all there is.
const (
	// ClusterAPIFencingPolicyName names the cluster-scoped policy.
	ClusterAPIFencingPolicyName = "cluster-api-fencing.hypershift.openshift.io"
	// ClusterAPIFencingMessageMarker starts every denial's message.
	ClusterAPIFencingMessageMarker = "fenced: " + hyperv1.ClusterAPIName + " pod"
)

// ClusterAPIFencingPolicy is the policy every control-plane namespace of
// platform Pod binds.
func ClusterAPIFencingPolicy() *admissionregistrationv1.ValidatingAdmissionPolicy {
	holds := fmt.Sprintf("has(request.userInfo.extra) && '%[1]s' in request.userInfo.extra && size(request.userInfo.extra['%[1]s']) > 0 && request.userInfo.extra['%[1]s'][0] != '' && has(params.spec.holderIdentity) && params.spec.holderIdentity.startsWith(request.userInfo.extra['%[1]s'][0] + '_')", PodNameExtra)
	return leaderFencingPolicy(ClusterAPIFencingPolicyName, hyperv1.ClusterAPIName, holds, ClusterAPIFencingMessageMarker)
}

// ClusterAPIFencingBindingName names the binding of ClusterAPIFencingPolicy
// to every fenced control-plane namespace.
const ClusterAPIFencingBindingName = ClusterAPIFencingPolicyName

// ClusterAPIFencingBinding binds ClusterAPIFencingPolicy to every namespace
// labelled LeaderFencingLabel, with the cluster-api manager's Lease as its
// param. A namespace without that Lease (a platform other than Pod) is not
// judged: its param is not found, and no cluster-api manager runs there.
func ClusterAPIFencingBinding() *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return leaderFencingBinding(ClusterAPIFencingBindingName, ClusterAPIFencingPolicyName, hyperv1.ClusterAPILeaseName,
		map[string]string{LeaderFencingLabel: "true"}, nil)
}

// NamespaceClusterAPIFencingBindingName names the binding of
// ClusterAPIFencingPolicy to namespace alone, which earlier versions
// applied per control-plane namespace (the hypershift-operator deletes those
// it finds).
func NamespaceClusterAPIFencingBindingName(namespace string) string {
	return "cluster-api-fencing." + namespace
}
