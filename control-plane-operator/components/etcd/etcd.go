// Package etcd is the hosted control plane's etcd: a StatefulSet of one
// member (SingleReplica) or three (HighlyAvailable), each with its data on
// a claim from volumeClaimTemplates, serving clients and peers over TLS
// with client-certificate authentication.
//
// Members reach each other without cluster DNS. Each member has a Service
// of its own (etcd-0, etcd-1, ...) that selects only its pod and publishes
// it before it is ready, so its ClusterIP is the member's stable address.
// A member is named after its pod and advertises https://<pod name>:2380;
// the pod template's hostAliases resolve every member's name to its
// Service's ClusterIP, so the peer URLs are the same in every pod while
// each member advertises its own. Clients use the etcd-client Service by
// its ClusterIP (a single member's published before it is ready).
package etcd

import (
	"fmt"
	"net"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/control-plane-operator/component"
	"github.com/hypershift-le/hypershift/control-plane-operator/pki"
)

const (
	// Name names the component and its StatefulSet.
	Name = "etcd"
	// ImageTag is the release payload tag of etcd's image.
	ImageTag = "etcd"
	// ClientServiceName is the Service etcd's clients use.
	ClientServiceName = "etcd-client"
	// ClientPort serves etcd's clients.
	ClientPort = 2379
	// PeerPort serves the other members.
	PeerPort = 2380
	// MetricsPort serves metrics and the health endpoints over HTTP.
	MetricsPort = 2381

	highlyAvailableMembers = 3
)

// Component is etcd.
type Component struct{}

var _ component.Component = Component{}

// Name implements component.Component.
func (Component) Name() string { return Name }

// DependsOn implements component.Component: etcd depends on nothing.
func (Component) DependsOn() []string { return nil }

// Members returns the member names: the StatefulSet's pod names, which
// also name the members' Services.
func Members(hcp *hyperv1.HostedControlPlane) []string {
	n := component.Replicas(hcp.Spec.ControllerAvailabilityPolicy, highlyAvailableMembers)
	members := make([]string, n)
	for i := range members {
		members[i] = fmt.Sprintf("%s-%d", Name, i)
	}
	return members
}

// Services implements component.Component: the client Service and one
// Service per member.
func (Component) Services(hcp *hyperv1.HostedControlPlane) []*corev1.Service {
	// One member has no other to steer clients to while it is not ready:
	// publishing it as soon as it runs lets the kube-apiserver's first
	// connection succeed when etcd first serves, not after its readiness
	// is seen and its endpoint programmed (and the client's reconnect
	// back-off on top). Three members stay behind readiness: a member
	// without a quorum must not take a client's one connection.
	single := len(Members(hcp)) == 1
	client := service(hcp, ClientServiceName, component.Selector(Name), single,
		servicePort("client", ClientPort))
	services := []*corev1.Service{client}
	for _, member := range Members(hcp) {
		services = append(services, service(hcp, member,
			map[string]string{"statefulset.kubernetes.io/pod-name": member}, true,
			servicePort("peer", PeerPort), servicePort("client", ClientPort)))
	}
	return services
}

func service(hcp *hyperv1.HostedControlPlane, name string, selector map[string]string, publishNotReady bool, ports ...corev1.ServicePort) *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: component.ObjectMeta(hcp, Name, name),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: selector,
			Ports:    ports,
			// A member must reach its peers before it is ready: readiness
			// needs a quorum.
			PublishNotReadyAddresses: publishNotReady,
		},
	}
}

func servicePort(name string, port int32) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Port: port, TargetPort: intstr.FromString(name), Protocol: corev1.ProtocolTCP}
}

// ClientURL is the URL etcd's clients use: the etcd-client Service's
// ClusterIP.
func ClientURL(in component.Inputs) (string, error) {
	ip, err := in.ClusterIP(ClientServiceName)
	if err != nil {
		return "", err
	}
	return "https://" + net.JoinHostPort(ip, fmt.Sprint(ClientPort)), nil
}

// ServerNames are the names etcd's serving certificate covers: the client
// Service by address and DNS name, every member, and localhost.
func ServerNames(hcp *hyperv1.HostedControlPlane, clusterIPs map[string]string) pki.Names {
	names := serviceNames(hcp.Namespace, ClientServiceName)
	names = append(names, "localhost")
	ips := []net.IP{net.ParseIP("127.0.0.1")}
	if ip := net.ParseIP(clusterIPs[ClientServiceName]); ip != nil {
		ips = append(ips, ip)
	}
	peers := PeerNames(hcp, clusterIPs)
	return pki.Names{DNSNames: append(names, peers.DNSNames...), IPAddresses: append(ips, peers.IPAddresses...)}
}

// PeerNames are the names the peer certificate covers: every member's
// name, its Service's DNS names, and its Service's ClusterIP.
func PeerNames(hcp *hyperv1.HostedControlPlane, clusterIPs map[string]string) pki.Names {
	var names pki.Names
	for _, member := range Members(hcp) {
		names.DNSNames = append(names.DNSNames, serviceNames(hcp.Namespace, member)...)
		if ip := net.ParseIP(clusterIPs[member]); ip != nil {
			names.IPAddresses = append(names.IPAddresses, ip)
		}
	}
	return names
}

// serviceNames are a Service's DNS names, from the short one to the fully
// qualified one.
func serviceNames(namespace, service string) []string {
	return []string{service, service + "." + namespace, service + "." + namespace + ".svc", service + "." + namespace + ".svc.cluster.local"}
}

// initialCluster is etcd's --initial-cluster: every member by name.
func initialCluster(members []string) string {
	parts := make([]string, len(members))
	for i, m := range members {
		parts[i] = fmt.Sprintf("%s=%s", m, peerURL(m))
	}
	return strings.Join(parts, ",")
}

func peerURL(host string) string {
	return "https://" + net.JoinHostPort(host, fmt.Sprint(PeerPort))
}
