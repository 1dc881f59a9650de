package v1beta1

// ServiceType names a control plane service that can be published to the
// hosted cluster's users.
//
// +kubebuilder:validation:Enum=APIServer
type ServiceType string

const (
	// APIServer is the hosted cluster's kube-apiserver.
	APIServer ServiceType = "APIServer"
)

// PublishingStrategyType says how a control plane service is published.
//
// +kubebuilder:validation:Enum=NodePort;LoadBalancer
type PublishingStrategyType string

const (
	// NodePort publishes a service as a NodePort Service, reached on an
	// address of the management cluster's nodes.
	NodePort PublishingStrategyType = "NodePort"
	// LoadBalancer publishes a service as a LoadBalancer Service.
	LoadBalancer PublishingStrategyType = "LoadBalancer"
)

// ServicePublishingStrategyMapping says how one control plane service is
// published.
type ServicePublishingStrategyMapping struct {
	// service is the control plane service being published.
	//
	// +required
	Service ServiceType `json:"service"`

	// servicePublishingStrategy says how the service is published.
	//
	// +required
	ServicePublishingStrategy `json:"servicePublishingStrategy"`
}

// ServicePublishingStrategy says how a control plane service is published.
//
// +kubebuilder:validation:XValidation:rule="self.type == 'NodePort' ? has(self.nodePort) : !has(self.nodePort)",message="nodePort is required when type is NodePort, and forbidden otherwise"
// +kubebuilder:validation:XValidation:rule="self.type == 'LoadBalancer' || !has(self.loadBalancer)",message="loadBalancer is allowed only when type is LoadBalancer"
type ServicePublishingStrategy struct {
	// type is how the service is published: NodePort or LoadBalancer.
	//
	// +required
	Type PublishingStrategyType `json:"type"`

	// nodePort says where a NodePort Service is reached.
	//
	// +optional
	NodePort *NodePortPublishingStrategy `json:"nodePort,omitempty"`

	// loadBalancer configures a LoadBalancer Service.
	//
	// +optional
	LoadBalancer *LoadBalancerPublishingStrategy `json:"loadBalancer,omitempty"`
}

// NodePortPublishingStrategy says where a NodePort Service is reached.
type NodePortPublishingStrategy struct {
	// address is the host name or IP address of the management cluster's
	// nodes that clients reach the node port on, for example 127.0.0.1 or
	// api.example.com. The kube-apiserver's serving certificate covers it.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="isIP(self) || !format.dns1123Subdomain().validate(self).hasValue()",message="must be an IP address or a lowercase DNS name such as api.example.com"
	Address string `json:"address"`

	// port is the node port. When unset, the management cluster allocates
	// one, and status.controlPlaneEndpoint shows it.
	//
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port,omitempty"`
}

// LoadBalancerPublishingStrategy configures a LoadBalancer Service.
type LoadBalancerPublishingStrategy struct {
	// hostname is a DNS name that clients use and that points at the load
	// balancer. The kube-apiserver's serving certificate covers it. When
	// unset, clients use the address the load balancer reports.
	//
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="!format.dns1123Subdomain().validate(self).hasValue()",message="must be a lowercase DNS name such as api.example.com"
	Hostname string `json:"hostname,omitempty"`
}

// APIEndpoint is where clients reach the hosted kube-apiserver.
type APIEndpoint struct {
	// host is the host name or IP address.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Host string `json:"host"`

	// port is the TCP port.
	//
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port"`
}

// KubeconfigSecretRef names a Secret and the key in it that holds a
// kubeconfig.
type KubeconfigSecretRef struct {
	// name of the Secret.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// key in the Secret's data.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key"`
}

// APIServerPublishing returns the publishing strategy of the APIServer
// service, or nil when services has no APIServer entry.
func APIServerPublishing(services []ServicePublishingStrategyMapping) *ServicePublishingStrategy {
	for i := range services {
		if services[i].Service == APIServer {
			return &services[i].ServicePublishingStrategy
		}
	}
	return nil
}

// NodePortServices returns services that publish the APIServer on a
// NodePort at address; port 0 lets the management cluster allocate one.
func NodePortServices(address string, port int32) []ServicePublishingStrategyMapping {
	return []ServicePublishingStrategyMapping{{
		Service: APIServer,
		ServicePublishingStrategy: ServicePublishingStrategy{
			Type:     NodePort,
			NodePort: &NodePortPublishingStrategy{Address: address, Port: port},
		},
	}}
}

// APIServerNodePort returns the node port the APIServer entry of services
// asks for; 0 when it asks for none (allocated, or not a NodePort).
func APIServerNodePort(services []ServicePublishingStrategyMapping) int32 {
	if p := APIServerPublishing(services); p != nil && p.Type == NodePort && p.NodePort != nil {
		return p.NodePort.Port
	}
	return 0
}
