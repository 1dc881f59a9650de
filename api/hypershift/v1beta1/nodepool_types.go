package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// NodePoolSpec is what a platform team asks for: a set of worker nodes that
// join one HostedCluster.
type NodePoolSpec struct {
	// clusterName is the name of the HostedCluster, in the NodePool's
	// namespace, that the pool's nodes join. While no such HostedCluster
	// exists, the pool's ValidHostedCluster condition is False. It cannot be
	// changed: a node belongs to one cluster.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=61
	// +kubebuilder:validation:XValidation:rule="!format.dns1123Subdomain().validate(self).hasValue()",message="must be the name of a HostedCluster in this namespace: a lowercase RFC 1123 subdomain of at most 61 letters, digits, '-' and '.', starting and ending with a letter or digit"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="clusterName is immutable: create another NodePool"
	ClusterName string `json:"clusterName"`

	// release is the OpenShift release the pool's nodes run: its payload
	// decides the kubelet and the other node components. Changing it rolls
	// the nodes out to the new release, as management says. The
	// HostedCluster's control plane must not be older (SupportedVersionSkew).
	//
	// +required
	Release Release `json:"release"`

	// platform is where the pool's machines come from.
	//
	// +required
	Platform NodePoolPlatform `json:"platform"`

	// replicas is how many nodes the pool asks for; status.replicas counts
	// those that joined. Unset means 0.
	//
	// +optional
	// +kubebuilder:validation:Minimum=0
	Replicas *int32 `json:"replicas,omitempty"`

	// management says how the pool's nodes are replaced and repaired.
	//
	// +required
	Management NodePoolManagement `json:"management"`

	// nodeLabels are labels every node of the pool carries. A key is a label
	// key (an optional DNS subdomain prefix and '/', then a name), a value a
	// label value.
	//
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, !format.qualifiedName().validate(k).hasValue())",message="keys must be label keys such as example.com/role or role: an optional lowercase DNS subdomain prefix and '/', then at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !format.labelValue().validate(self[k]).hasValue())",message="values must be label values: empty, or at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
	NodeLabels map[string]string `json:"nodeLabels,omitempty"`

	// taints are taints every node of the pool carries, next to those other
	// controllers add. A taint is identified by its key and effect: each pair
	// may appear once.
	//
	// +optional
	// +listType=map
	// +listMapKey=key
	// +listMapKey=effect
	// +kubebuilder:validation:MaxItems=50
	Taints []Taint `json:"taints,omitempty"`

	// nodeDrainTimeout is how long the removal of a node waits for the node
	// to drain before it goes on regardless, as a duration such as 30s, 5m or
	// 1h30m. Unset or 0 waits as long as draining takes.
	//
	// +optional
	// +kubebuilder:validation:XValidation:rule="self.matches('^(0|([0-9]+([.][0-9]+)?(ns|us|µs|μs|ms|s|m|h))+)$')",message="must be a duration such as 30s, 5m or 1h30m: numbers with the units ns, us, ms, s, m or h, and not negative"
	NodeDrainTimeout *metav1.Duration `json:"nodeDrainTimeout,omitempty"`

	// pausedUntil stops reconciliation of this NodePool, as a HostedCluster's
	// pausedUntil does its cluster: an RFC3339 date-time (for example
	// 2026-01-02T15:04:05Z) pauses until then, "true" pauses until the field
	// is removed. NodePool.Paused interprets it.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=35
	// +kubebuilder:validation:XValidation:rule="self == 'true' || (self.matches('^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])[Tt]([01][0-9]|2[0-3]):[0-5][0-9]:([0-5][0-9]|60)([.][0-9]+)?([Zz]|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$') && !format.datetime().validate(self).hasValue())",message="must be an RFC3339 date-time such as 2026-01-02T15:04:05Z, or \"true\""
	PausedUntil *string `json:"pausedUntil,omitempty"`
}

// NodePoolPlatform says where a NodePool's machines come from.
type NodePoolPlatform struct {
	// type is the platform of the pool's machines. None: you bring the
	// machines; the operator publishes how they join. Pod: the management
	// cluster runs them, each a Pod in the control-plane namespace, made,
	// scaled, replaced and repaired by cluster-api (the HostedCluster must
	// be of platform Pod). It cannot be changed after creation.
	//
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="platform.type is immutable: create another NodePool"
	Type PlatformType `json:"type"`
}

// UpgradeType says how a NodePool's nodes take a new release or
// configuration.
//
// +kubebuilder:validation:Enum=Replace;InPlace
type UpgradeType string

const (
	// UpgradeTypeReplace replaces a node: a new node joins and the old one is
	// drained and removed.
	UpgradeTypeReplace UpgradeType = "Replace"
	// UpgradeTypeInPlace updates a node where it runs. It is not supported
	// yet: the API server refuses it.
	UpgradeTypeInPlace UpgradeType = "InPlace"
)

// UpgradeStrategy says when upgradeType Replace replaces a NodePool's nodes.
//
// +kubebuilder:validation:Enum=RollingUpdate;OnDelete
type UpgradeStrategy string

const (
	// UpgradeStrategyRollingUpdate replaces the nodes a few at a time, as
	// rollingUpdate bounds.
	UpgradeStrategyRollingUpdate UpgradeStrategy = "RollingUpdate"
	// UpgradeStrategyOnDelete replaces a node only once the user deletes it.
	UpgradeStrategyOnDelete UpgradeStrategy = "OnDelete"
)

// NodePoolManagement says how a NodePool's nodes are replaced and repaired.
//
// +kubebuilder:validation:XValidation:rule="!has(self.replace) || self.upgradeType == 'Replace'",message="replace is allowed only when upgradeType is Replace",fieldPath=.replace
type NodePoolManagement struct {
	// upgradeType is how a node takes a new release or configuration: Replace
	// replaces the node. InPlace, which would update a node where it runs, is
	// not supported. It cannot be changed after creation.
	//
	// +required
	// +kubebuilder:validation:XValidation:rule="self != 'InPlace'",message="upgradeType InPlace is not supported: use Replace"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="upgradeType is immutable: create another NodePool"
	UpgradeType UpgradeType `json:"upgradeType"`

	// replace says how upgradeType Replace replaces the nodes. Unset, it is
	// a RollingUpdate with maxSurge 1 and maxUnavailable 0.
	//
	// +optional
	Replace *ReplaceUpgrade `json:"replace,omitempty"`

	// autoRepair replaces a node that stays unhealthy.
	//
	// +optional
	// +kubebuilder:default=false
	AutoRepair bool `json:"autoRepair,omitempty"`
}

// ReplaceUpgrade says how upgradeType Replace replaces a NodePool's nodes.
//
// +kubebuilder:validation:XValidation:rule="!has(self.rollingUpdate) || self.strategy == 'RollingUpdate'",message="rollingUpdate is allowed only when strategy is RollingUpdate: remove it, or use strategy RollingUpdate",fieldPath=.rollingUpdate
type ReplaceUpgrade struct {
	// strategy is when nodes are replaced: RollingUpdate replaces them a few
	// at a time, as rollingUpdate bounds; OnDelete replaces a node only once
	// the user deletes it.
	//
	// +optional
	// +kubebuilder:default=RollingUpdate
	Strategy UpgradeStrategy `json:"strategy,omitempty"`

	// rollingUpdate bounds a RollingUpdate. Unset, maxSurge is 1 and
	// maxUnavailable 0.
	//
	// +optional
	RollingUpdate *RollingUpdate `json:"rollingUpdate,omitempty"`
}

// RollingUpdate bounds how many nodes a rolling update adds and takes away
// at a time, as a Deployment's rolling update does for its Pods.
//
// +kubebuilder:validation:XValidation:rule="!(string(self.maxSurge).matches('^0+%?$') && string(self.maxUnavailable).matches('^0+%?$'))",message="maxSurge and maxUnavailable cannot both be 0, or no node could ever be replaced: set maxSurge to 1 (a new node joins first) or maxUnavailable to 1 (an old node goes first)"
type RollingUpdate struct {
	// maxSurge is how many nodes the pool may have above replicas while it
	// replaces nodes: a number such as 2, or a percentage of replicas such as
	// 25% (rounded up). It may be 0 only when maxUnavailable is not.
	//
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 : self.matches('^[0-9]{1,3}%$')",message="must be a number of nodes, 0 or more, or a percentage of replicas such as 25%"
	MaxSurge *intstr.IntOrString `json:"maxSurge,omitempty"`

	// maxUnavailable is how many of replicas may be unavailable while the
	// pool replaces nodes: a number such as 1, or a percentage of replicas
	// such as 25% (rounded down), at most 100%. It may be 0 only when
	// maxSurge is not.
	//
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 : (self.matches('^[0-9]{1,3}%$') && int(self.replace('%', '')) <= 100)",message="must be a number of nodes, 0 or more, or a percentage of replicas from 0% to 100%"
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
}

// Taint is a taint on every node of a NodePool: a Node's taint without its
// timeAdded.
type Taint struct {
	// key of the taint, a label key such as example.com/dedicated.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:XValidation:rule="!format.qualifiedName().validate(self).hasValue()",message="must be a label key such as example.com/dedicated or dedicated: an optional lowercase DNS subdomain prefix and '/', then at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
	Key string `json:"key"`

	// value of the taint, a label value; may be empty.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="!format.labelValue().validate(self).hasValue()",message="must be a label value: empty, or letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
	Value string `json:"value,omitempty"`

	// effect is what the taint does to Pods that do not tolerate it:
	// NoSchedule, PreferNoSchedule or NoExecute.
	//
	// +required
	// +kubebuilder:validation:Enum=NoSchedule;PreferNoSchedule;NoExecute
	Effect corev1.TaintEffect `json:"effect"`
}

// NodePoolStatus is what the operator observed of a NodePool's nodes.
type NodePoolStatus struct {
	// replicas is how many of the pool's nodes have joined the hosted
	// cluster.
	//
	// +optional
	// +kubebuilder:validation:Minimum=0
	Replicas int32 `json:"replicas"`

	// version is the release version the pool's nodes run, once a rollout
	// completed.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Version string `json:"version,omitempty"`

	// observedGeneration is the NodePool generation this status was computed
	// from.
	//
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions describe the pool's state: Ready, AllMachinesReady,
	// AllNodesHealthy, UpdatingVersion, SupportedVersionSkew,
	// ValidReleaseImage, ValidHostedCluster, ValidPlatformConfig and
	// AutoscalingEnabled.
	//
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// NodePool is a set of worker nodes of one HostedCluster, in the
// HostedCluster's namespace.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas
// +kubebuilder:resource:path=nodepools,shortName=np;nps,scope=Namespaced
// +kubebuilder:printcolumn:name="Cluster",type="string",JSONPath=".spec.clusterName",description="The HostedCluster the nodes join"
// +kubebuilder:printcolumn:name="Desired Nodes",type="integer",JSONPath=".spec.replicas",description="How many nodes the pool asks for (unset: 0)"
// +kubebuilder:printcolumn:name="Current Nodes",type="integer",JSONPath=".status.replicas",description="How many of the pool's nodes have joined"
// +kubebuilder:printcolumn:name="Autoscaling",type="string",JSONPath=".status.conditions[?(@.type==\"AutoscalingEnabled\")].status",description="Whether an autoscaler sets the pool's size"
// +kubebuilder:printcolumn:name="Autorepair",type="boolean",JSONPath=".spec.management.autoRepair",description="Whether a node that stays unhealthy is replaced"
// +kubebuilder:printcolumn:name="Version",type="string",JSONPath=".status.version",description="Release version the nodes run"
// +kubebuilder:printcolumn:name="UpdatingVersion",type="string",JSONPath=".status.conditions[?(@.type==\"UpdatingVersion\")].status",description="Whether the nodes are rolling out to a new release"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Message",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].message",description="Why the pool is or is not ready"
// +kubebuilder:printcolumn:name="Platform",type="string",priority=1,JSONPath=".spec.platform.type",description="Where the pool's machines come from"
// +kubebuilder:printcolumn:name="Release",type="string",priority=1,JSONPath=".spec.release.image",description="The release image the nodes run or roll out to, as the user gave it"
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 50 && !format.dns1123Label().validate(self.metadata.name).hasValue()",message="metadata.name must be a lowercase RFC 1123 label of at most 50 characters (letters, digits and '-', starting and ending with a letter or digit): it is part of the names of the pool's nodes and Secrets"
type NodePool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is what the platform team asks for.
	//
	// +required
	Spec NodePoolSpec `json:"spec"`

	// status is what the operator observed.
	//
	// +optional
	Status NodePoolStatus `json:"status,omitempty"`
}

// NodePoolList is a list of NodePools.
//
// +kubebuilder:object:root=true
type NodePoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodePool `json:"items"`
}
