// Package v1beta1 holds the infrastructure.hypershift.openshift.io/v1beta1
// API: cluster-api's infrastructure provider for HostedClusters and
// NodePools of platform Pod, whose machines are Pods of the management
// cluster. PodCluster is a cluster's infrastructure (nothing to provision:
// the management cluster is), PodMachine one machine, PodMachineTemplate
// what a MachineDeployment's machines are made from. cluster-api finds the
// contract these kinds keep (its v1beta2 infrastructure contract) by the
// label ContractLabel on their CRDs.
//
// +kubebuilder:object:generate=true
// +groupName=infrastructure.hypershift.openshift.io
package v1beta1
