// Package kubecontrollermanager is the hosted cluster's
// kube-controller-manager: a Deployment of one replica (SingleReplica) or
// two that elect a leader (HighlyAvailable), reaching the kube-apiserver
// with its own kubeconfig, signing the hosted cluster's certificate
// requests with the root CA and its service-account tokens with the
// service-account key.
package kubecontrollermanager

import (
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/control-plane-operator/component"
	"github.com/hypershift-le/hypershift/control-plane-operator/components/kubeapiserver"
	"github.com/hypershift-le/hypershift/control-plane-operator/pki"
	"github.com/hypershift-le/hypershift/support/podspec"
	"github.com/hypershift-le/hypershift/support/resources"
)

const (
	// Name names the component and its Deployment.
	Name = "kube-controller-manager"
	// ImageTag is the release payload tag of its image.
	ImageTag = "hyperkube"
	// Port serves /healthz.
	Port = 10257

	kubeconfigDir     = "/etc/kubernetes/kubeconfig"
	signerDir         = "/etc/kubernetes/certs/cluster-signer"
	serviceAccountDir = "/etc/kubernetes/secrets/service-account"

	highlyAvailableReplicas = 2
)

// Component is the kube-controller-manager; it serves nothing to the others.
type Component struct{ component.NoServices }

var _ component.Component = Component{}

// Name implements component.Component.
func (Component) Name() string { return Name }

// DependsOn implements component.Component: it works through the
// kube-apiserver.
func (Component) DependsOn() []string { return []string{kubeapiserver.Name} }

// Resources are each replica's: its working set is 36-47 MiB idle (make
// bench-controlplanes, 10 control planes); the limit bounds a controller
// caching a cluster that grew tenfold. The CPU request is what a converged
// one used, 17-18m (same run, mean over 2 minutes), with room.
var Resources = resources.Defaults{CPU: "20m", Memory: "64Mi", MemoryLimit: "512Mi"}

// Workload implements component.Component.
func (Component) Workload(in component.Inputs) (*component.Workload, error) {
	hcp := in.HostedControlPlane
	image, err := in.Image(Name, ImageTag)
	if err != nil {
		return nil, err
	}
	replicas := component.Replicas(hcp.Spec.ControllerAvailabilityPolicy, highlyAvailableReplicas)
	res, err := in.Resources(Name, Name, Resources)
	if err != nil {
		return nil, err
	}
	container := component.Container(Name, image, []string{"/usr/bin/kube-controller-manager"}, args(hcp, replicas), res)
	container.Ports = []corev1.ContainerPort{component.TCPPort("https", Port)}
	container.StartupProbe = podspec.StartupProbe("/healthz", "https", corev1.URISchemeHTTPS)
	container.LivenessProbe = podspec.HTTPProbe("/healthz", "https", corev1.URISchemeHTTPS, 0, 10, 5)
	container.ReadinessProbe = podspec.HTTPProbe("/healthz", "https", corev1.URISchemeHTTPS, 0, 10, 3)
	container.VolumeMounts = []corev1.VolumeMount{
		component.Mount("kubeconfig", kubeconfigDir),
		component.Mount("cluster-signer", signerDir),
		component.Mount("service-account-key", serviceAccountDir),
	}
	pod := component.PodSpec(hcp, container,
		component.SecretVolume("kubeconfig", pki.KubeControllerManagerKubeconfigSecret),
		component.SecretVolume("cluster-signer", pki.RootCASecret),
		component.SecretVolume("service-account-key", pki.ServiceAccountKeySecret, pki.ServiceAccountPrivateKeyKey))
	return in.Deployment(Name, replicas, component.ControllerStrategy(replicas), pod,
		pki.KubeControllerManagerKubeconfigSecret, pki.RootCASecret, pki.ServiceAccountKeySecret), nil
}

// Controllers are the controllers kube-controller-manager runs: the
// default ones, and the two that make bootstrap tokens work: the signer of
// the cluster-info ConfigMap a joining node trusts, and the cleaner of
// expired tokens.
const Controllers = "*,bootstrapsigner,tokencleaner"

// args is kube-controller-manager's command line.
func args(hcp *hyperv1.HostedControlPlane, replicas int32) []string {
	kubeconfig := kubeconfigDir + "/" + pki.KubeconfigKey
	a := []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
	}
	a = append(a, component.SecurePort(Port)...)
	a = append(a,
		"--use-service-account-credentials=true",
		"--controllers="+Controllers,
		"--root-ca-file="+signerDir+"/"+pki.CACertKey,
		"--cluster-signing-cert-file="+signerDir+"/"+pki.CACertKey,
		"--cluster-signing-key-file="+signerDir+"/"+pki.CAKeyKey,
		"--service-account-private-key-file="+serviceAccountDir+"/"+pki.ServiceAccountPrivateKeyKey,
	)
	a = append(a, component.LeaderElection(replicas)...)
	a = append(a, component.Flag("cluster-cidr", component.ClusterNetwork(hcp))...)
	a = append(a, nodeCIDRArgs(hcp)...)
	a = append(a, component.Flag("service-cluster-ip-range", component.ServiceNetwork(hcp))...)
	return append(a, component.Flag("feature-gates", component.FeatureGates(hcp))...)
}

// nodeCIDRArgs make the node IPAM controller give each Node its pod
// subnet (spec.podCIDR) from the cluster network, of the first network's
// hostPrefix of each family (24 for IPv4 and 64 for IPv6 when unset), as
// kubeadm's clusters do: the pod network of the machines of platform Pod
// routes by it, and kube-proxy tells local traffic by it.
func nodeCIDRArgs(hcp *hyperv1.HostedControlPlane) []string {
	if len(hcp.Spec.Networking.ClusterNetwork) == 0 {
		return nil
	}
	args := []string{"--allocate-node-cidrs=true"}
	seen := map[bool]bool{}
	for _, n := range hcp.Spec.Networking.ClusterNetwork {
		prefix, err := netip.ParsePrefix(n.CIDR)
		if err != nil || seen[prefix.Addr().Is4()] {
			continue
		}
		seen[prefix.Addr().Is4()] = true
		size, family := int32(64), "ipv6"
		if prefix.Addr().Is4() {
			size, family = 24, "ipv4"
		}
		if n.HostPrefix > 0 {
			size = n.HostPrefix
		}
		args = append(args, fmt.Sprintf("--node-cidr-mask-size-%s=%d", family, size))
	}
	return args
}
