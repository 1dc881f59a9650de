package kubeapiserver

import (
	"net"

	corev1 "k8s.io/api/core/v1"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/control-plane-operator/pki"
)

// Endpoint is where clients reach the kube-apiserver, from
// spec.services and the live Service: the NodePort's address and port; the
// load balancer's host name, or the address it reports, on Port. It
// returns nil and the reason while the endpoint is not known yet, or when
// spec.services does not publish the APIServer: a ClusterIP is no endpoint,
// since no client outside the management cluster reaches it.
func Endpoint(hcp *hyperv1.HostedControlPlane, live *corev1.Service) (*hyperv1.APIEndpoint, string) {
	if live == nil {
		return nil, "The kube-apiserver Service does not exist yet"
	}
	publishing := hyperv1.APIServerPublishing(hcp.Spec.Services)
	switch {
	case publishing == nil:
		return nil, "The kube-apiserver is not published: spec.services has no APIServer entry"
	case publishing.Type == hyperv1.NodePort && publishing.NodePort != nil:
		for _, p := range live.Spec.Ports {
			if p.NodePort != 0 && (publishing.NodePort.Port == 0 || p.NodePort == publishing.NodePort.Port) {
				return &hyperv1.APIEndpoint{Host: publishing.NodePort.Address, Port: p.NodePort}, ""
			}
		}
		return nil, "The kube-apiserver Service has no node port yet"
	case publishing.Type == hyperv1.LoadBalancer:
		if publishing.LoadBalancer != nil && publishing.LoadBalancer.Hostname != "" {
			return &hyperv1.APIEndpoint{Host: publishing.LoadBalancer.Hostname, Port: Port}, ""
		}
		for _, ingress := range live.Status.LoadBalancer.Ingress {
			if host := ingress.Hostname; host != "" {
				return &hyperv1.APIEndpoint{Host: host, Port: Port}, ""
			}
			if ip := ingress.IP; ip != "" {
				return &hyperv1.APIEndpoint{Host: ip, Port: Port}, ""
			}
		}
		return nil, "The kube-apiserver's load balancer reports no address yet"
	}
	return nil, "The APIServer publishing strategy is incomplete"
}

// ServingNames are the names the serving certificate covers: the Service
// by address and DNS name, the hosted cluster's own kubernetes Service by
// its DNS names and first address, the published endpoint's host, and
// localhost.
func ServingNames(hcp *hyperv1.HostedControlPlane, clusterIPs map[string]string, endpoint *hyperv1.APIEndpoint) pki.Names {
	ns := hcp.Namespace
	names := pki.Names{
		DNSNames: []string{
			Name, Name + "." + ns, Name + "." + ns + ".svc", Name + "." + ns + ".svc.cluster.local",
			"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local",
			"localhost",
		},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}
	add := func(host string) {
		if ip := net.ParseIP(host); ip != nil {
			names.IPAddresses = append(names.IPAddresses, ip)
		} else if host != "" {
			names.DNSNames = append(names.DNSNames, host)
		}
	}
	add(clusterIPs[Name])
	for _, cidr := range hcp.Spec.Networking.ServiceNetwork {
		if ip := firstAddress(cidr.CIDR); ip != nil {
			names.IPAddresses = append(names.IPAddresses, ip)
		}
	}
	if endpoint != nil {
		add(endpoint.Host)
	}
	return dedupe(names)
}

// firstAddress is the first host address of a CIDR: the hosted cluster's
// kubernetes Service gets it.
func firstAddress(cidr string) net.IP {
	_, network, err := net.ParseCIDR(cidr)
	if err != nil {
		return nil
	}
	ip := make(net.IP, len(network.IP))
	copy(ip, network.IP)
	for i := len(ip) - 1; i >= 0; i-- {
		ip[i]++
		if ip[i] != 0 {
			break
		}
	}
	return ip
}

func dedupe(n pki.Names) pki.Names {
	seen := map[string]bool{}
	var out pki.Names
	for _, name := range n.DNSNames {
		if !seen[name] {
			seen[name] = true
			out.DNSNames = append(out.DNSNames, name)
		}
	}
	for _, ip := range n.IPAddresses {
		if !seen[ip.String()] {
			seen[ip.String()] = true
			out.IPAddresses = append(out.IPAddresses, ip)
		}
	}
	return out
}
