package render

import (
	"fmt"
	"sort"
	"strings"

	configv1 "github.com/openshift/api/config/v1"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
)

// args returns the command-line arguments of a component: the ports and
// directories it is laid out with, and what derives from the
// HostedControlPlane. Flags with nothing to say (no networks, no custom
// feature gates) are left out so that the component's defaults apply.
func args(hcp *hyperv1.HostedControlPlane, component string) []string {
	clusterCIDRs := clusterNetworkCIDRs(hcp)
	serviceCIDRs := serviceNetworkCIDRs(hcp)
	gates := FeatureGates(hcp)
	var a []string
	switch component {
	case Etcd:
		// etcd takes no feature gates.
		return []string{
			"--data-dir=" + etcdDataDir,
			fmt.Sprintf("--listen-client-urls=https://0.0.0.0:%d", EtcdClientPort),
			"--advertise-client-urls=" + EtcdURL(hcp.Namespace),
			fmt.Sprintf("--listen-metrics-urls=http://0.0.0.0:%d", EtcdMetricsPort),
		}
	case KubeAPIServer:
		a = []string{
			fmt.Sprintf("--secure-port=%d", KubeAPIServerPort),
			"--cert-dir=" + tmpDir,
			"--etcd-servers=" + EtcdURL(hcp.Namespace),
		}
		a = appendFlag(a, "--service-cluster-ip-range", serviceCIDRs)
	case KubeControllerManager:
		a = []string{
			fmt.Sprintf("--secure-port=%d", KubeControllerManagerPort),
			"--cert-dir=" + tmpDir,
		}
		a = appendFlag(a, "--cluster-cidr", clusterCIDRs)
		a = appendFlag(a, "--service-cluster-ip-range", serviceCIDRs)
	case KubeScheduler:
		a = []string{
			fmt.Sprintf("--secure-port=%d", KubeSchedulerPort),
			"--cert-dir=" + tmpDir,
		}
	}
	return appendFlag(a, "--feature-gates", gates)
}

// EtcdURL is the client URL of the etcd Service in a control-plane namespace.
func EtcdURL(namespace string) string {
	return fmt.Sprintf("https://%s.%s.svc:%d", Etcd, namespace, EtcdClientPort)
}

// FeatureGates returns the feature gates of a HostedControlPlane as
// name=true|false, sorted by name. Only the CustomNoUpgrade feature set
// names gates; for any other set, or none, the result is empty. A gate both
// enabled and disabled is disabled.
func FeatureGates(hcp *hyperv1.HostedControlPlane) []string {
	cfg := hcp.Spec.Configuration
	if cfg == nil || cfg.FeatureGate == nil || cfg.FeatureGate.FeatureSet != configv1.CustomNoUpgrade || cfg.FeatureGate.CustomNoUpgrade == nil {
		return nil
	}
	custom := cfg.FeatureGate.CustomNoUpgrade
	values := map[string]bool{}
	for _, name := range custom.Enabled {
		values[string(name)] = true
	}
	for _, name := range custom.Disabled {
		values[string(name)] = false
	}
	delete(values, "")
	names := make([]string, 0, len(values))
	for name := range values {
		names = append(names, name)
	}
	sort.Strings(names)
	gates := make([]string, 0, len(names))
	for _, name := range names {
		gates = append(gates, fmt.Sprintf("%s=%t", name, values[name]))
	}
	return gates
}

// appendFlag appends --name=v1,v2,... unless there are no values.
func appendFlag(a []string, name string, values []string) []string {
	if len(values) == 0 {
		return a
	}
	return append(a, name+"="+strings.Join(values, ","))
}

func clusterNetworkCIDRs(hcp *hyperv1.HostedControlPlane) []string {
	var cidrs []string
	for _, n := range hcp.Spec.Networking.ClusterNetwork {
		cidrs = append(cidrs, n.CIDR)
	}
	return cidrs
}

func serviceNetworkCIDRs(hcp *hyperv1.HostedControlPlane) []string {
	var cidrs []string
	for _, n := range hcp.Spec.Networking.ServiceNetwork {
		cidrs = append(cidrs, n.CIDR)
	}
	return cidrs
}
