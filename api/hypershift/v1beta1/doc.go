// Package v1beta1 holds the hypershift.openshift.io/v1beta1 API: the
// HostedCluster a platform team creates, the HostedControlPlane the
// hypershift-operator derives from it for the control-plane-operator, the
// NodePools that give a HostedCluster its worker nodes, and the names, labels
// and condition types that the operators and the CLI share.
//
// Validation lives in the types as OpenAPI and CEL markers, so the API server
// refuses bad input before any controller sees it.
//
// +kubebuilder:object:generate=true
// +groupName=hypershift.openshift.io
package v1beta1
