package v1beta1

import (
	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// HostedClusterSpec is what a platform team asks for: one hosted control plane.
//
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.infraID) || (has(self.infraID) && self.infraID == oldSelf.infraID)",message="infraID is immutable once set",fieldPath=.infraID
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.clusterID) || (has(self.clusterID) && self.clusterID == oldSelf.clusterID)",message="clusterID is immutable once set",fieldPath=.clusterID
// +kubebuilder:validation:XValidation:rule="has(self.services) && self.services.exists(s, s.service == 'APIServer')",message="must publish the APIServer service, e.g. [{service: APIServer, servicePublishingStrategy: {type: NodePort, nodePort: {address: <an address of the management cluster's nodes>}}}] or type LoadBalancer; hypershift create cluster fills it in",fieldPath=.services
type HostedClusterSpec struct {
	// release is the OpenShift release the hosted control plane runs.
	// Changing it upgrades the control plane. The hypershift-operator pins
	// the payload it reads by digest (status.version.desired.image): a tag
	// that later names another payload changes nothing until the user
	// accepts that payload (the accept-release-digest annotation) or
	// changes this field.
	//
	// +required
	Release Release `json:"release"`

	// controllerAvailabilityPolicy says how many replicas the control plane's
	// components, the control-plane-operator among them, run with. It cannot
	// be changed after creation: etcd's membership does not change.
	//
	// +optional
	// +kubebuilder:default=SingleReplica
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="controllerAvailabilityPolicy is immutable"
	ControllerAvailabilityPolicy AvailabilityPolicy `json:"controllerAvailabilityPolicy,omitempty"`

	// platform is the infrastructure the hosted cluster runs on.
	//
	// +required
	Platform PlatformSpec `json:"platform"`

	// networking holds the hosted cluster's address ranges.
	//
	// +optional
	// +kubebuilder:default={clusterNetwork: {{cidr: "10.132.0.0/14"}}, serviceNetwork: {{cidr: "172.31.0.0/16"}}}
	Networking ClusterNetworking `json:"networking,omitempty"`

	// services says how the control plane's services are published to the
	// hosted cluster's users, one entry per service. It must publish the
	// APIServer: a kube-apiserver reached on its Service's ClusterIP only
	// would be reachable from no client outside the management cluster.
	// There is no default, because the right address (one of the
	// management cluster's nodes that clients reach) is not known at
	// admission; hypershift create cluster fills it in.
	//
	// +optional
	// +listType=map
	// +listMapKey=service
	// +kubebuilder:validation:MaxItems=6
	Services []ServicePublishingStrategyMapping `json:"services,omitempty"`

	// pullSecret names a Secret of type kubernetes.io/dockerconfigjson, in the
	// HostedCluster's namespace, used to pull the release payload and the
	// control plane's images.
	//
	// +required
	PullSecret LocalObjectReference `json:"pullSecret"`

	// infraID is a short identifier of the cluster's infrastructure, used to
	// name and tag resources. It cannot be changed once set.
	//
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="must consist of lowercase letters, digits and '-', and start and end with a letter or digit"
	InfraID string `json:"infraID,omitempty"`

	// clusterID uniquely identifies the cluster, as an RFC 4122 UUID.
	// It cannot be changed once set.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=36
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$')",message="must be an RFC 4122 UUID in lowercase hexadecimal (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)"
	ClusterID string `json:"clusterID,omitempty"`

	// etcd describes the hosted cluster's etcd.
	//
	// +optional
	// +kubebuilder:default={managementType: Managed}
	Etcd EtcdSpec `json:"etcd,omitempty"`

	// pausedUntil stops reconciliation of this cluster: an RFC3339 date-time
	// (for example 2026-01-02T15:04:05Z) pauses until then, "true" pauses until
	// the field is removed.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=35
	// +kubebuilder:validation:XValidation:rule="self == 'true' || (self.matches('^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])[Tt]([01][0-9]|2[0-3]):[0-5][0-9]:([0-5][0-9]|60)([.][0-9]+)?([Zz]|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$') && !format.datetime().validate(self).hasValue())",message="must be an RFC3339 date-time such as 2026-01-02T15:04:05Z, or \"true\""
	PausedUntil *string `json:"pausedUntil,omitempty"`

	// configuration is the OpenShift configuration of the hosted cluster.
	//
	// +optional
	Configuration *ClusterConfiguration `json:"configuration,omitempty"`

	// secretEncryption names the keys the hosted cluster's Secrets are
	// encrypted with in its etcd. Unset, they are encrypted with a key the
	// control-plane-operator generates.
	//
	// +optional
	SecretEncryption *SecretEncryptionSpec `json:"secretEncryption,omitempty"`
}

// HostedClusterStatus is what the hypershift-operator observed and did.
type HostedClusterStatus struct {
	// conditions describe the cluster's state: Available, Progressing,
	// ValidConfiguration, ValidReleaseImage, ReconciliationActive and
	// ReconciliationSucceeded.
	//
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// version is the release the control plane is asked to run and the
	// history of releases it has run.
	//
	// +optional
	Version *ClusterVersionStatus `json:"version,omitempty"`

	// controlPlaneEndpoint is where clients reach the hosted kube-apiserver,
	// once it is published.
	//
	// +optional
	ControlPlaneEndpoint *APIEndpoint `json:"controlPlaneEndpoint,omitempty"`

	// kubeconfig names the Secret, in the HostedCluster's namespace, whose
	// "kubeconfig" key holds an administrator's kubeconfig of the hosted
	// cluster.
	//
	// +optional
	KubeConfig *LocalObjectReference `json:"kubeconfig,omitempty"`

	// controlPlaneOperator shows which control-plane-operator pod holds the
	// control plane's Lease. It changes only when leadership changes, never
	// on a renewal.
	//
	// +optional
	ControlPlaneOperator *ControlPlaneOperatorStatus `json:"controlPlaneOperator,omitempty"`

	// verifiedFence is what LeaderFencing=True was last verified for: the
	// fencing policy and the binding that fences this control plane's
	// namespace (one for every fenced namespace), at the generations
	// the API server was seen to enforce, and the Lease holder whose writes
	// it admitted. A hypershift-operator that starts, or takes over as
	// leader, trusts a verdict whose objects and holder are unchanged
	// instead of probing the fence again. Empty while LeaderFencing is not
	// True.
	//
	// +optional
	VerifiedFence *VerifiedFence `json:"verifiedFence,omitempty"`
}

// VerifiedFence identifies one verdict of the fence: the objects and the
// holder it was for.
type VerifiedFence struct {
	// policyUID is the fencing ValidatingAdmissionPolicy's uid.
	//
	// +required
	// +kubebuilder:validation:MaxLength=64
	PolicyUID string `json:"policyUID"`

	// policyGeneration is the fencing policy's metadata.generation.
	//
	// +required
	// +kubebuilder:validation:Minimum=0
	PolicyGeneration int64 `json:"policyGeneration"`

	// bindingUID is the fencing ValidatingAdmissionPolicyBinding's uid.
	//
	// +required
	// +kubebuilder:validation:MaxLength=64
	BindingUID string `json:"bindingUID"`

	// bindingGeneration is the fencing binding's metadata.generation.
	//
	// +required
	// +kubebuilder:validation:Minimum=0
	BindingGeneration int64 `json:"bindingGeneration"`

	// holderIdentity is the Lease holder the fence admitted; empty when no
	// pod held the Lease and the fence refused every write.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=253
	HolderIdentity string `json:"holderIdentity,omitempty"`
}

// ClusterVersionStatus is the desired release and the releases a control
// plane has run, newest first.
type ClusterVersionStatus struct {
	// desired is the release the control plane is asked to run. Its image
	// is the payload the hypershift-operator read for spec.release.image,
	// pinned by digest (<repository>@sha256:<digest>); a spec that names a
	// digest is kept as written. The HostedControlPlane and the
	// control-plane-operator are given this image, never the tag.
	//
	// +required
	Desired configv1.Release `json:"desired"`

	// requestedImage is spec.release.image as it was when desired.image
	// was pinned from it. While the two are equal the pin holds, even when
	// the tag comes to name another payload (ReleaseImageTagMoved); a new
	// spec.release.image is read and pinned anew.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	RequestedImage string `json:"requestedImage,omitempty"`

	// history lists the releases the control plane has run or is rolling out
	// to, newest first. An entry is Partial until the rollout completes.
	//
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	History []configv1.UpdateHistory `json:"history,omitempty"`

	// observedGeneration is the HostedCluster generation the desired release
	// was taken from.
	//
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// ControlPlaneOperatorStatus shows the control-plane-operator's Lease as far
// as it changes with leadership.
type ControlPlaneOperatorStatus struct {
	// holderIdentity is the Lease's spec.holderIdentity: the name of the pod
	// that currently leads. Empty while no pod holds the Lease.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=253
	HolderIdentity string `json:"holderIdentity,omitempty"`

	// leaseTransitions is the Lease's spec.leaseTransitions: how many times
	// leadership changed hands.
	//
	// +optional
	// +kubebuilder:validation:Minimum=0
	LeaseTransitions int32 `json:"leaseTransitions,omitempty"`
}

// HostedCluster is a Kubernetes control plane hosted on this management
// cluster. The hypershift-operator runs its control plane in the namespace
// <namespace>-<name>.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=hostedclusters,shortName=hc;hcs,scope=Namespaced
// +kubebuilder:printcolumn:name="Version",type="string",JSONPath=".status.version.history[?(@.state==\"Completed\")].version",description="Version of the last completed rollout"
// +kubebuilder:printcolumn:name="Available",type="string",JSONPath=".status.conditions[?(@.type==\"Available\")].status",description="Whether the hosted control plane is available"
// +kubebuilder:printcolumn:name="Progressing",type="string",JSONPath=".status.conditions[?(@.type==\"Progressing\")].status",description="Whether a rollout is in progress"
// +kubebuilder:printcolumn:name="Leader",type="string",JSONPath=".status.controlPlaneOperator.holderIdentity",description="Pod holding the control-plane-operator Lease"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Message",type="string",JSONPath=".status.conditions[?(@.type==\"Available\")].message",description="Why the hosted control plane is or is not available"
// +kubebuilder:printcolumn:name="Reason",type="string",priority=1,JSONPath=".status.conditions[?(@.type==\"Available\")].reason",description="The reason of the Available condition"
// +kubebuilder:printcolumn:name="Endpoint",type="string",priority=1,JSONPath=".status.controlPlaneEndpoint.host",description="Where the hosted kube-apiserver is reached"
// +kubebuilder:printcolumn:name="Release",type="string",priority=1,JSONPath=".spec.release.image",description="The release image the cluster runs or rolls out to, as the user gave it"
// +kubebuilder:printcolumn:name="Pinned",type="string",priority=1,JSONPath=".status.version.desired.image",description="The release payload the control plane is asked to run, pinned by digest"
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 61",message="metadata.name must be at most 61 characters, so that the control-plane namespace <namespace>-<name> fits in 63"
type HostedCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is what the platform team asks for.
	//
	// +required
	Spec HostedClusterSpec `json:"spec"`

	// status is what the hypershift-operator observed.
	//
	// +optional
	Status HostedClusterStatus `json:"status,omitempty"`
}

// HostedClusterList is a list of HostedClusters.
//
// +kubebuilder:object:root=true
type HostedClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []HostedCluster `json:"items"`
}
