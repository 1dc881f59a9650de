package nodepool

import (
	"fmt"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/hostednetwork"
)

// ClusterDomain is the hosted clusters' DNS domain, which their CoreDNS
// serves.
const ClusterDomain = "cluster.local"

// kubeletConfig is the hosted cluster's part of a machine's kubelet
// configuration, a drop-in (--config-dir) over the machine's own: the DNS
// address and domain its pods are given, no anonymous calls to the
// kubelet's API and the rest authorized by the hosted kube-apiserver, and
// its client and serving certificates from TLS bootstrap, renewed before
// they expire. It names no path: the machine's own configuration sets
// authentication.x509.clientCAFile (to the join material's ca.crt) and
// everything that is the machine's.
func kubeletConfig(hc *hyperv1.HostedCluster) ([]byte, error) {
	dns, err := hostednetwork.DNSAddress(hc.Spec.Networking.ServiceNetwork)
	if err != nil {
		return nil, err
	}
	return fmt.Appendf(nil, `# The part of the kubelet's configuration that HostedCluster %s/%s sets.
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
clusterDNS: [%s]
clusterDomain: %s
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
authorization:
  mode: Webhook
rotateCertificates: true
serverTLSBootstrap: true
`, hc.Namespace, hc.Name, dns, ClusterDomain), nil
}
