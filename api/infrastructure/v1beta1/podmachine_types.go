package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodMachineSpec is one machine: a privileged Pod of the management
// cluster, in the PodMachine's namespace and of its name, that runs the
// machine image (containerd and a kubelet) and joins the hosted cluster
// with its Machine's bootstrap data (a NodePool's join material).
type PodMachineSpec struct {
	// providerID is the machine's ID, which its kubelet registers its Node
	// with: pod://<namespace>/<name>. The control-plane-operator sets it;
	// cluster-api matches the Node by it.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=512
	ProviderID string `json:"providerID,omitempty"`

	// image is the machine image (the release payload's machine image):
	// containerd, runc, the kubelet, the CNI plugins.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Image string `json:"image"`

	// sandboxImage is the pause image of the machine's pod sandboxes (the
	// release payload's pod image).
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	SandboxImage string `json:"sandboxImage"`

	// insecureRegistries are registry hosts the machine pulls from over
	// plain HTTP, as the operators do.
	//
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=253
	InsecureRegistries []string `json:"insecureRegistries,omitempty"`
}

// MachineAddress is an address of a machine, in cluster-api's shape.
type MachineAddress struct {
	// type is the address's kind: Hostname, InternalIP, ...
	//
	// +required
	// +kubebuilder:validation:Enum=Hostname;ExternalIP;InternalIP;ExternalDNS;InternalDNS
	Type string `json:"type"`

	// address is the address.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Address string `json:"address"`
}

// PodMachineStatus is what the control-plane-operator observed of the
// machine's Pod.
type PodMachineStatus struct {
	// initialization says whether the machine is provisioned: its Pod runs.
	//
	// +optional
	Initialization *Initialization `json:"initialization,omitempty"`

	// addresses are the machine's: its Pod's IP and its name.
	//
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	Addresses []MachineAddress `json:"addresses,omitempty"`

	// conditions: Ready says whether the machine's Pod runs, and why not.
	//
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// PodMachine is one machine of a MachineDeployment of platform Pod, in the
// control-plane namespace; cluster-api's Machine of the same name owns it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=podmachines,scope=Namespaced,categories=cluster-api
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1beta1"
// +kubebuilder:printcolumn:name="Provider ID",type="string",JSONPath=".spec.providerID"
// +kubebuilder:printcolumn:name="Provisioned",type="boolean",JSONPath=".status.initialization.provisioned"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Message",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].message"
type PodMachine struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec PodMachineSpec `json:"spec"`
	// +optional
	Status PodMachineStatus `json:"status,omitempty"`
}

// PodMachineList is a list of PodMachines.
//
// +kubebuilder:object:root=true
type PodMachineList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodMachine `json:"items"`
}

// PodMachineTemplateResource is what a template's machines are made from.
type PodMachineTemplateResource struct {
	// spec is every machine's spec.
	//
	// +required
	Spec PodMachineSpec `json:"spec"`
}

// PodMachineTemplateSpec holds the template.
type PodMachineTemplateSpec struct {
	// template is what the machines are made from. It cannot change: a
	// MachineDeployment rolls out to a new template.
	//
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="a PodMachineTemplate cannot change: create another and point the MachineDeployment at it"
	Template PodMachineTemplateResource `json:"template"`
}

// PodMachineTemplate is what the machines of a MachineDeployment of
// platform Pod are made from, one per NodePool config (release and
// kubelet configuration), in the control-plane namespace.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=podmachinetemplates,scope=Namespaced,categories=cluster-api
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1beta1"
// +kubebuilder:printcolumn:name="Image",type="string",JSONPath=".spec.template.spec.image"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type PodMachineTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec PodMachineTemplateSpec `json:"spec"`
}

// PodMachineTemplateList is a list of PodMachineTemplates.
//
// +kubebuilder:object:root=true
type PodMachineTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodMachineTemplate `json:"items"`
}
