package v1beta1

import (
	configv1 "github.com/openshift/api/config/v1"
)

// Release names an OpenShift release payload.
type Release struct {
	// image is the pull spec of the release payload image, for example
	// quay.io/openshift-release-dev/ocp-release:4.17.0-x86_64. The payload's
	// image references decide the images of the components that run the
	// release: the control plane's, or a NodePool's nodes'.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]{1,5})?(/[a-z0-9]+([._-]+[a-z0-9]+)*)*(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[a-f0-9]{64})?$')",message="must be an image pull spec such as quay.io/openshift-release-dev/ocp-release:4.17.0-x86_64: lowercase registry and repository, optional :tag and @sha256:digest, no spaces"
	Image string `json:"image"`
}

// AvailabilityPolicy says how many replicas the control plane's components
// run with.
//
// +kubebuilder:validation:Enum=SingleReplica;HighlyAvailable
type AvailabilityPolicy string

const (
	// SingleReplica runs one replica of each component. A rollout or a lost
	// node interrupts the component for as long as its replacement takes.
	SingleReplica AvailabilityPolicy = "SingleReplica"
	// HighlyAvailable runs several replicas of each component; only the
	// replica holding the component's Lease acts.
	HighlyAvailable AvailabilityPolicy = "HighlyAvailable"
)

// PlatformType names the infrastructure a hosted cluster's workers run on.
//
// +kubebuilder:validation:Enum=None;Pod
type PlatformType string

const (
	// NonePlatform manages no infrastructure: workers are brought by the
	// user. For a NodePool: you bring the machines; the operator publishes
	// how they join.
	NonePlatform PlatformType = "None"
	// PodPlatform runs the workers for you, on the management cluster:
	// each machine is a Pod there, in the control-plane namespace, running
	// its own containerd and kubelet (as KubeVirt runs a VM in a Pod), made
	// and replaced by cluster-api's MachineDeployments. A HostedCluster of
	// this platform also takes NodePools of platform None.
	PodPlatform PlatformType = "Pod"
)

// PlatformSpec describes the infrastructure of a hosted cluster.
type PlatformSpec struct {
	// type is the platform the hosted cluster runs on. It cannot be changed
	// after creation.
	//
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="platform.type is immutable"
	Type PlatformType `json:"type"`
}

// ClusterNetworking holds the address ranges of a hosted cluster. The ranges
// cannot be changed once set: every node and Service already uses them.
//
// +kubebuilder:validation:XValidation:rule="!has(self.clusterNetwork) || !has(self.serviceNetwork) || self.clusterNetwork.all(c, self.serviceNetwork.all(s, !isCIDR(c.cidr) || !isCIDR(s.cidr) || (!cidr(c.cidr).containsCIDR(cidr(s.cidr)) && !cidr(s.cidr).containsCIDR(cidr(c.cidr)))))",message="clusterNetwork and serviceNetwork must not overlap",fieldPath=.serviceNetwork
type ClusterNetworking struct {
	// clusterNetwork is the list of ranges Pod addresses are taken from.
	//
	// +optional
	// +listType=atomic
	// +kubebuilder:default={{cidr: "10.132.0.0/14"}}
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="clusterNetwork is immutable"
	ClusterNetwork []ClusterNetworkEntry `json:"clusterNetwork,omitempty"`

	// serviceNetwork is the list of ranges Service addresses are taken from.
	//
	// +optional
	// +listType=atomic
	// +kubebuilder:default={{cidr: "172.31.0.0/16"}}
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="serviceNetwork is immutable"
	ServiceNetwork []ServiceNetworkEntry `json:"serviceNetwork,omitempty"`
}

// ClusterNetworkEntry is one range of Pod addresses.
//
// +kubebuilder:validation:XValidation:rule="!has(self.hostPrefix) || self.hostPrefix == 0 || !isCIDR(self.cidr) || (self.hostPrefix > cidr(self.cidr).prefixLength() && self.hostPrefix <= (cidr(self.cidr).ip().family() == 4 ? 32 : 128))",message="hostPrefix must be longer than the cidr's prefix (each node gets a part of the range) and at most 32 for IPv4, 128 for IPv6",fieldPath=.hostPrefix
type ClusterNetworkEntry struct {
	// cidr is the range in CIDR notation, for example 10.132.0.0/14.
	//
	// +required
	// +kubebuilder:validation:MaxLength=43
	// +kubebuilder:validation:XValidation:rule="isCIDR(self)",message="must be a CIDR such as 10.132.0.0/14 or fd01::/48"
	// +kubebuilder:validation:XValidation:rule="!isCIDR(self) || cidr(self) == cidr(self).masked()",message="must be a network address, with no host bits set (for example 10.132.0.0/14, not 10.132.0.1/14)"
	CIDR string `json:"cidr"`

	// hostPrefix is the prefix length of the range each node gets
	// (spec.podCIDR): 24 for IPv4 and 64 for IPv6 when unset.
	//
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=128
	HostPrefix int32 `json:"hostPrefix,omitempty"`
}

// ServiceNetworkEntry is one range of Service addresses.
type ServiceNetworkEntry struct {
	// cidr is the range in CIDR notation, for example 172.31.0.0/16.
	//
	// +required
	// +kubebuilder:validation:MaxLength=43
	// +kubebuilder:validation:XValidation:rule="isCIDR(self)",message="must be a CIDR such as 172.31.0.0/16 or fd02::/112"
	// +kubebuilder:validation:XValidation:rule="!isCIDR(self) || cidr(self) == cidr(self).masked()",message="must be a network address, with no host bits set (for example 172.31.0.0/16, not 172.31.0.1/16)"
	CIDR string `json:"cidr"`
}

// EtcdManagementType says who runs a hosted cluster's etcd.
//
// +kubebuilder:validation:Enum=Managed
type EtcdManagementType string

const (
	// Managed etcd runs in the control-plane namespace, operated by the
	// control-plane-operator.
	Managed EtcdManagementType = "Managed"
)

// EtcdSpec describes a hosted cluster's etcd.
//
// +kubebuilder:validation:XValidation:rule="has(self.restoreFrom) == has(oldSelf.restoreFrom)",message="etcd.restoreFrom can only be set when the HostedCluster is created: create a new HostedCluster from the backup"
type EtcdSpec struct {
	// managementType says who runs etcd. Only Managed is supported.
	//
	// +optional
	// +kubebuilder:default=Managed
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="etcd.managementType is immutable"
	ManagementType EtcdManagementType `json:"managementType,omitempty"`

	// restoreFrom starts a new cluster's etcd from a snapshot instead of
	// empty: every member is restored from it before it first starts. It
	// is set when the HostedCluster is created and cannot change. The
	// cluster's control plane is not created until the snapshot was found
	// and checked (the EtcdSnapshotRestored condition says why it waits).
	//
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="etcd.restoreFrom is immutable"
	RestoreFrom *EtcdRestoreSource `json:"restoreFrom,omitempty"`
}

// EtcdRestoreSource is the snapshot a new cluster's etcd starts from.
type EtcdRestoreSource struct {
	// etcdBackup names a complete EtcdBackup in the HostedCluster's
	// namespace. The Secrets in its snapshot are read with the keys it
	// kept (status.snapshot.encryptionConfigSecret) and then rewritten
	// with the new cluster's key.
	//
	// +required
	EtcdBackup LocalObjectReference `json:"etcdBackup"`
}

// ClusterConfiguration is the OpenShift configuration of a hosted cluster,
// in the config.openshift.io/v1 types.
// +kubebuilder:validation:XValidation:rule="!has(self.apiServer) || !has(self.apiServer.encryption) || !has(self.apiServer.encryption.type) || size(self.apiServer.encryption.type) == 0",message="apiServer.encryption is not used by hosted clusters: their Secrets are always encrypted at rest (aescbc); name keys of your own in spec.secretEncryption"
type ClusterConfiguration struct {
	// apiServer configures the hosted cluster's API server.
	//
	// +optional
	APIServer *configv1.APIServerSpec `json:"apiServer,omitempty"`

	// featureGate selects the hosted cluster's feature gates.
	//
	// +optional
	FeatureGate *configv1.FeatureGateSpec `json:"featureGate,omitempty"`
}

// PausedUntilPattern is the shape pausedUntil must have: an RFC3339 date-time
// or the word "true". The API server checks it; ParsePausedUntil is the
// matching parser for controllers.
const PausedUntilPattern = `^(true|[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])[Tt]([01][0-9]|2[0-3]):[0-5][0-9]:([0-5][0-9]|60)([.][0-9]+)?([Zz]|[+-]([01][0-9]|2[0-3]):[0-5][0-9]))$`

// LocalObjectReference names an object in the same namespace.
type LocalObjectReference struct {
	// name of the object.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="!format.dns1123Subdomain().validate(self).hasValue()",message="must be a lowercase RFC 1123 subdomain: lowercase letters, digits, '-' and '.', starting and ending with a letter or digit"
	Name string `json:"name"`
}
