package kubeapiserver

import (
	"errors"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/control-plane-operator/component"
	"github.com/hypershift-le/hypershift/control-plane-operator/component/componenttest"
)

func TestGolden(t *testing.T) { componenttest.Golden(t, Component{}) }

func TestPodsArePodSecurityRestricted(t *testing.T) { componenttest.Restricted(t, Component{}) }

func TestArgsReachEtcdOverTLSByAddressAndServeTheServiceNetwork(t *testing.T) {
	in := componenttest.Inputs(hyperv1.SingleReplica)
	in.HostedControlPlane.Spec.Networking.ServiceNetwork = []hyperv1.ServiceNetworkEntry{{CIDR: "172.30.0.0/16"}, {CIDR: "fd02::/112"}}
	w, err := Component{}.Workload(in)
	if err != nil {
		t.Fatal(err)
	}
	args := w.Object.(*appsv1.Deployment).Spec.Template.Spec.Containers[0].Args
	for _, want := range []string{
		"--etcd-servers=https://10.96.0.10:2379",
		"--etcd-certfile=/etc/kubernetes/certs/etcd-client/tls.crt",
		"--service-cluster-ip-range=172.30.0.0/16,fd02::/112",
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction,PodSecurity",
		"--client-ca-file=/etc/kubernetes/certs/client-ca/ca.crt",
		"--service-account-signing-key-file=/etc/kubernetes/secrets/service-account/service-account.key",
	} {
		if !slices.Contains(args, want) {
			t.Errorf("args lack %s:\n%s", want, strings.Join(args, "\n"))
		}
	}
}

func TestWorkloadWaitsForTheEtcdAddress(t *testing.T) {
	in := componenttest.Inputs(hyperv1.SingleReplica)
	delete(in.ClusterIPs, "etcd-client")
	_, err := Component{}.Workload(in)
	var missing *component.MissingAddressError
	if !errors.As(err, &missing) || missing.Service != "etcd-client" {
		t.Fatalf("error = %v, want a MissingAddressError for etcd-client", err)
	}
}

func TestServiceFollowsThePublishingStrategy(t *testing.T) {
	tests := []struct {
		name         string
		services     []hyperv1.ServicePublishingStrategyMapping
		wantType     corev1.ServiceType
		wantNodePort int32
	}{
		{name: "when the API server is not published, it is a ClusterIP Service", wantType: corev1.ServiceTypeClusterIP},
		{name: "when published on a NodePort with a port, it asks for that port", services: nodePort("127.0.0.1", 30443), wantType: corev1.ServiceTypeNodePort, wantNodePort: 30443},
		{name: "when published on a NodePort without a port, one is allocated", services: nodePort("127.0.0.1", 0), wantType: corev1.ServiceTypeNodePort},
		{name: "when published by a LoadBalancer, it is a LoadBalancer Service", services: loadBalancer(""), wantType: corev1.ServiceTypeLoadBalancer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := componenttest.Inputs(hyperv1.SingleReplica)
			in.HostedControlPlane.Spec.Services = tt.services
			svc := Component{}.Services(in.HostedControlPlane)[0]
			if svc.Spec.Type != tt.wantType || svc.Spec.Ports[0].NodePort != tt.wantNodePort || svc.Spec.Ports[0].Port != Port {
				t.Errorf("type %s, port %d, nodePort %d", svc.Spec.Type, svc.Spec.Ports[0].Port, svc.Spec.Ports[0].NodePort)
			}
		})
	}
}

func nodePort(address string, port int32) []hyperv1.ServicePublishingStrategyMapping {
	return []hyperv1.ServicePublishingStrategyMapping{{Service: hyperv1.APIServer, ServicePublishingStrategy: hyperv1.ServicePublishingStrategy{
		Type: hyperv1.NodePort, NodePort: &hyperv1.NodePortPublishingStrategy{Address: address, Port: port},
	}}}
}

func loadBalancer(hostname string) []hyperv1.ServicePublishingStrategyMapping {
	s := hyperv1.ServicePublishingStrategy{Type: hyperv1.LoadBalancer}
	if hostname != "" {
		s.LoadBalancer = &hyperv1.LoadBalancerPublishingStrategy{Hostname: hostname}
	}
	return []hyperv1.ServicePublishingStrategyMapping{{Service: hyperv1.APIServer, ServicePublishingStrategy: s}}
}

func TestEndpoint(t *testing.T) {
	live := func(nodePort int32, ingress ...corev1.LoadBalancerIngress) *corev1.Service {
		return &corev1.Service{
			Spec:   corev1.ServiceSpec{ClusterIP: "10.96.0.20", Ports: []corev1.ServicePort{{Port: Port, NodePort: nodePort}}},
			Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: ingress}},
		}
	}
	tests := []struct {
		name     string
		services []hyperv1.ServicePublishingStrategyMapping
		live     *corev1.Service
		want     *hyperv1.APIEndpoint
	}{
		{name: "when not published, it is unknown: a ClusterIP is no endpoint", live: live(0)},
		{name: "when on a NodePort, it is the address and the node port", services: nodePort("127.0.0.1", 30443), live: live(30443), want: &hyperv1.APIEndpoint{Host: "127.0.0.1", Port: 30443}},
		{name: "when on an allocated NodePort, it is the port the Service got", services: nodePort("api.example.com", 0), live: live(31999), want: &hyperv1.APIEndpoint{Host: "api.example.com", Port: 31999}},
		{name: "when the node port is not allocated yet, it is unknown", services: nodePort("127.0.0.1", 0), live: live(0)},
		{name: "when the Service asks another node port than it has, it is unknown", services: nodePort("127.0.0.1", 30443), live: live(31999)},
		{name: "when a load balancer has a host name in spec, it is that name", services: loadBalancer("api.example.com"), live: live(31000), want: &hyperv1.APIEndpoint{Host: "api.example.com", Port: Port}},
		{name: "when a load balancer reports an address, it is that address", services: loadBalancer(""), live: live(31000, corev1.LoadBalancerIngress{IP: "192.0.2.10"}), want: &hyperv1.APIEndpoint{Host: "192.0.2.10", Port: Port}},
		{name: "when a load balancer reports nothing yet, it is unknown", services: loadBalancer(""), live: live(31000)},
		{name: "when the Service does not exist, it is unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hcp := componenttest.Inputs(hyperv1.SingleReplica).HostedControlPlane
			hcp.Spec.Services = tt.services
			got, why := Endpoint(hcp, tt.live)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("endpoint (-want +got):\n%s", diff)
			}
			if (got == nil) == (why == "") {
				t.Errorf("endpoint %v with reason %q: an unknown endpoint needs a reason, a known one none", got, why)
			}
		})
	}
}

func TestServingNamesCoverEveryWayTheAPIIsReached(t *testing.T) {
	in := componenttest.Inputs(hyperv1.SingleReplica)
	in.HostedControlPlane.Spec.Networking.ServiceNetwork = []hyperv1.ServiceNetworkEntry{{CIDR: "172.31.0.0/16"}, {CIDR: "fd02::/112"}}
	names := ServingNames(in.HostedControlPlane, in.ClusterIPs, &hyperv1.APIEndpoint{Host: "api.example.com", Port: 443})
	for _, want := range []string{
		"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local",
		"kube-apiserver", "kube-apiserver.clusters-demo.svc", "localhost", "api.example.com",
	} {
		if !slices.Contains(names.DNSNames, want) {
			t.Errorf("DNS names lack %s: %v", want, names.DNSNames)
		}
	}
	for _, want := range []string{"127.0.0.1", "10.96.0.20", "172.31.0.1", "fd02::1"} {
		if !slices.ContainsFunc(names.IPAddresses, func(ip net.IP) bool { return ip.Equal(net.ParseIP(want)) }) {
			t.Errorf("IP addresses lack %s: %v", want, names.IPAddresses)
		}
	}
	withIP := ServingNames(in.HostedControlPlane, in.ClusterIPs, &hyperv1.APIEndpoint{Host: "127.0.0.1", Port: 30443})
	if slices.Contains(withIP.DNSNames, "127.0.0.1") {
		t.Error("an IP endpoint became a DNS name")
	}
	seen := map[string]bool{}
	for _, ip := range withIP.IPAddresses {
		if seen[ip.String()] {
			t.Errorf("%s is listed twice", ip)
		}
		seen[ip.String()] = true
	}
}
