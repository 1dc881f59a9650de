package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodClusterSpec is the infrastructure of a HostedCluster of platform Pod:
// the management cluster runs its machines, so there is nothing to set.
type PodClusterSpec struct{}

// Initialization is cluster-api's contract field: whether the
// infrastructure is provisioned.
type Initialization struct {
	// provisioned is true once the infrastructure is there: cluster-api
	// waits for it.
	//
	// +optional
	Provisioned *bool `json:"provisioned,omitempty"`
}

// PodClusterStatus is what the control-plane-operator observed.
type PodClusterStatus struct {
	// initialization says whether the infrastructure is provisioned: for
	// the management cluster's Pods, as soon as the control-plane-operator
	// has seen the PodCluster.
	//
	// +optional
	Initialization *Initialization `json:"initialization,omitempty"`
}

// PodCluster is the infrastructure cluster-api's Cluster of a HostedCluster
// of platform Pod references, in the control-plane namespace, named as the
// HostedCluster.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=podclusters,scope=Namespaced,categories=cluster-api
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1beta1"
// +kubebuilder:printcolumn:name="Provisioned",type="boolean",JSONPath=".status.initialization.provisioned"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type PodCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec PodClusterSpec `json:"spec,omitempty"`
	// +optional
	Status PodClusterStatus `json:"status,omitempty"`
}

// PodClusterList is a list of PodClusters.
//
// +kubebuilder:object:root=true
type PodClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodCluster `json:"items"`
}
