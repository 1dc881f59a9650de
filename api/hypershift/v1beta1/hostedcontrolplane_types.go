package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// HostedControlPlaneSpec is what the control-plane-operator needs to run one
// hosted control plane. The hypershift-operator derives it from the
// HostedCluster; users do not edit it.
//
// +kubebuilder:validation:XValidation:rule="has(self.services) && self.services.exists(s, s.service == 'APIServer')",message="must publish the APIServer service, as the HostedCluster's spec.services does",fieldPath=.services
type HostedControlPlaneSpec struct {
	// releaseImage is the pull spec of the release payload, resolved by the
	// hypershift-operator: the payload it read for the HostedCluster's
	// spec.release.image, pinned by digest (<repository>@sha256:<digest>),
	// as the HostedCluster's status.version.desired.image shows it.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]{1,5})?(/[a-z0-9]+([._-]+[a-z0-9]+)*)*(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[a-f0-9]{64})?$')",message="must be an image pull spec such as quay.io/openshift-release-dev/ocp-release:4.17.0-x86_64: lowercase registry and repository, optional :tag and @sha256:digest, no spaces"
	ReleaseImage string `json:"releaseImage"`

	// controllerAvailabilityPolicy says how many replicas the control plane's
	// components run with. It cannot be changed after creation: etcd's
	// membership does not change.
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

	// services is a copy of the HostedCluster's services: how the control
	// plane's services are published.
	//
	// +optional
	// +listType=map
	// +listMapKey=service
	// +kubebuilder:validation:MaxItems=6
	Services []ServicePublishingStrategyMapping `json:"services,omitempty"`

	// pullSecret names the Secret, in the control-plane namespace, used to pull
	// the control plane's images.
	//
	// +required
	PullSecret LocalObjectReference `json:"pullSecret"`

	// infraID is a copy of the HostedCluster's infraID.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=253
	InfraID string `json:"infraID,omitempty"`

	// clusterID is a copy of the HostedCluster's clusterID.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=36
	ClusterID string `json:"clusterID,omitempty"`

	// etcd describes the hosted cluster's etcd.
	//
	// +optional
	// +kubebuilder:default={managementType: Managed}
	Etcd EtcdSpec `json:"etcd,omitempty"`

	// pausedUntil is a copy of the HostedCluster's pausedUntil: the
	// control-plane-operator does not reconcile until then.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=35
	// +kubebuilder:validation:XValidation:rule="self == 'true' || (self.matches('^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])[Tt]([01][0-9]|2[0-3]):[0-5][0-9]:([0-5][0-9]|60)([.][0-9]+)?([Zz]|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$') && !format.datetime().validate(self).hasValue())",message="must be an RFC3339 date-time such as 2026-01-02T15:04:05Z, or \"true\""
	PausedUntil *string `json:"pausedUntil,omitempty"`

	// configuration is the OpenShift configuration of the hosted cluster.
	//
	// +optional
	Configuration *ClusterConfiguration `json:"configuration,omitempty"`

	// secretEncryption is the HostedCluster's, its key Secrets named by
	// their copies in the control-plane namespace.
	//
	// +optional
	SecretEncryption *SecretEncryptionSpec `json:"secretEncryption,omitempty"`
}

// HostedControlPlaneStatus is what the control-plane-operator observed.
type HostedControlPlaneStatus struct {
	// conditions describe the control plane's state, one Available condition
	// per component and an overall Available.
	//
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ready is true when every component of the control plane is available.
	//
	// +optional
	Ready bool `json:"ready"`

	// initialization is cluster-api's control plane contract: the
	// HostedControlPlane is the control plane its Cluster references, for
	// NodePools whose machines the management cluster runs.
	//
	// +optional
	Initialization *ControlPlaneInitialization `json:"initialization,omitempty"`

	// externalManagedControlPlane is true: cluster-api's contract for a
	// control plane that runs on no Machine of its Cluster. cluster-api
	// then drains and deletes the Nodes of the workers it removes, which it
	// would not do for a cluster without control plane nodes.
	//
	// +optional
	ExternalManagedControlPlane *bool `json:"externalManagedControlPlane,omitempty"`

	// version is the release version every component runs, once a rollout
	// completed.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Version string `json:"version,omitempty"`

	// secretEncryption says which key the hosted cluster's Secrets are
	// encrypted with.
	//
	// +optional
	SecretEncryption *SecretEncryptionStatus `json:"secretEncryption,omitempty"`

	// releaseImage is the release payload the running components came from.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	ReleaseImage string `json:"releaseImage,omitempty"`

	// controlPlaneEndpoint is where clients reach the hosted kube-apiserver,
	// once it is published.
	//
	// +optional
	ControlPlaneEndpoint *APIEndpoint `json:"controlPlaneEndpoint,omitempty"`

	// kubeConfig names the Secret, in the control-plane namespace, and its
	// key, that hold an administrator's kubeconfig of the hosted cluster.
	//
	// +optional
	KubeConfig *KubeconfigSecretRef `json:"kubeConfig,omitempty"`

	// observedGeneration is the generation the control-plane-operator last
	// reconciled.
	//
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// ControlPlaneInitialization says, to cluster-api, whether the control
// plane came up.
type ControlPlaneInitialization struct {
	// controlPlaneInitialized is true once the control plane was available
	// for the first time; it stays true.
	//
	// +optional
	ControlPlaneInitialized *bool `json:"controlPlaneInitialized,omitempty"`
}

// HostedControlPlane is the control-plane-operator's view of one hosted
// control plane. It lives in the control-plane namespace and has the name of
// its HostedCluster.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=hostedcontrolplanes,shortName=hcp;hcps,scope=Namespaced
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1beta1"
// +kubebuilder:printcolumn:name="Ready",type="boolean",JSONPath=".status.ready",description="Whether every component is available"
// +kubebuilder:printcolumn:name="Version",type="string",JSONPath=".status.version",description="Release version of the components"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type HostedControlPlane struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is what the control-plane-operator must run.
	//
	// +required
	Spec HostedControlPlaneSpec `json:"spec"`

	// status is what the control-plane-operator observed.
	//
	// +optional
	Status HostedControlPlaneStatus `json:"status,omitempty"`
}

// HostedControlPlaneList is a list of HostedControlPlanes.
//
// +kubebuilder:object:root=true
type HostedControlPlaneList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []HostedControlPlane `json:"items"`
}
