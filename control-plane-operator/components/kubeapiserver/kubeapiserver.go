// Package kubeapiserver is the hosted cluster's kube-apiserver: a
// Deployment of one replica (SingleReplica) or three (HighlyAvailable) that
// stores in etcd over TLS, serves with the PKI's certificate, trusts the
// root CA for clients, signs service-account tokens, and is published by a
// Service of the type spec.services asks for: ClusterIP when it names no
// APIServer entry, NodePort (with the given port) or LoadBalancer. It
// writes an audit log by spec.configuration.apiServer.audit (audit.go): the
// policy in a ConfigMap, the log in a volume of its pod, which the
// audit-logs container copies to its standard output. It stores Secrets
// encrypted with the keys of the encryption configuration the PKI keeps
// (pki.EncryptionConfigSecret).
package kubeapiserver

import (
	"fmt"
	"net"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/control-plane-operator/component"
	"github.com/hypershift-le/hypershift/control-plane-operator/components/etcd"
)

const (
	// Name names the component, its Deployment and its Service.
	Name = hyperv1.KubeAPIServerComponent
	// ImageTag is the release payload tag of its image.
	ImageTag = "hyperkube"
	// Port serves the hosted cluster's API, in the pod and on the Service.
	Port = hyperv1.KubeAPIServerPort

	highlyAvailableReplicas = 3
)

// Component is the kube-apiserver.
type Component struct{}

var _ component.Component = Component{}

// Name implements component.Component.
func (Component) Name() string { return Name }

// DependsOn implements component.Component: it stores in etcd.
func (Component) DependsOn() []string { return []string{etcd.Name} }

// StartsWithDependencies implements component.EarlyStarter: on a first
// start the kube-apiserver starts with etcd (its storage client retries
// until etcd serves); its start-up, the longest step to a working API,
// overlaps etcd's.
func (Component) StartsWithDependencies() bool { return true }

var _ component.EarlyStarter = Component{}

// Services implements component.Component: one Service, published the way
// spec.services says.
func (Component) Services(hcp *hyperv1.HostedControlPlane) []*corev1.Service {
	port := corev1.ServicePort{Name: "https", Port: Port, TargetPort: intstr.FromString("https"), Protocol: corev1.ProtocolTCP}
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: component.ObjectMeta(hcp, Name, Name),
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Selector: component.Selector(Name)},
	}
	if publishing := hyperv1.APIServerPublishing(hcp.Spec.Services); publishing != nil {
		switch publishing.Type {
		case hyperv1.NodePort:
			svc.Spec.Type = corev1.ServiceTypeNodePort
			if publishing.NodePort != nil {
				port.NodePort = publishing.NodePort.Port
			}
		case hyperv1.LoadBalancer:
			svc.Spec.Type = corev1.ServiceTypeLoadBalancer
		}
	}
	svc.Spec.Ports = []corev1.ServicePort{port}
	return []*corev1.Service{svc}
}

// InternalURL reaches the kube-apiserver from inside the management
// cluster, by its Service's ClusterIP.
func InternalURL(in component.Inputs) (string, error) {
	ip, err := in.ClusterIP(Name)
	if err != nil {
		return "", err
	}
	return "https://" + net.JoinHostPort(ip, strconv.Itoa(Port)), nil
}

// URL is the https URL of an endpoint.
func URL(endpoint *hyperv1.APIEndpoint) string {
	return "https://" + net.JoinHostPort(endpoint.Host, fmt.Sprint(endpoint.Port))
}
