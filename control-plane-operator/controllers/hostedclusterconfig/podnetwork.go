package hostedclusterconfig

import (
	"fmt"
	"net/netip"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
)

// PodNetworkImageTag is the release payload's image of the pod network of
// the machines of platform Pod.
const PodNetworkImageTag = "pod-network"

const (
	podNetworkName   = "pod-network"
	podNetworkConfig = "/var/lib/pod-network"
	cniConfigDir     = "/etc/cni/net.d"
)

// podNetwork runs the pod network on every machine that asks for it
// (hyperv1.PodNetworkNodeLabel: the machines of platform Pod): a DaemonSet
// in each machine's network that gives its pods their addresses from the
// Node's pod subnet and routes them to the other machines' (package
// hypershift-machine/podnetwork). It reads Nodes, nothing else, with a kubeconfig
// that reaches the kube-apiserver at its published endpoint, as
// kube-proxy's does: Services work only once the pod network does. No
// image in the payload, no pod network: the release has no machines of
// platform Pod.
func podNetwork(in DataPlaneInputs, endpoint *hyperv1.APIEndpoint) ([]client.Object, error) {
	if in.PodNetworkImage == "" {
		return nil, nil
	}
	clusterNetwork, err := firstIPv4ClusterNetwork(in.HostedControlPlane)
	if err != nil {
		return nil, err
	}
	labels := map[string]string{"k8s-app": podNetworkName}
	ns := metav1.NamespaceSystem
	role := &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
		ObjectMeta: meta("", "hypershift:pod-network", nil),
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch"}}},
	}
	hostPath := func(name, path string, t corev1.HostPathType) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path, Type: &t}}}
	}
	ds := &appsv1.DaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: appsv1.SchemeGroupVersion.String(), Kind: "DaemonSet"},
		ObjectMeta: meta(ns, podNetworkName, labels),
		Spec: appsv1.DaemonSetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: labels},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: podNetworkName,
					HostNetwork:        true,
					PriorityClassName:  "system-node-critical",
					NodeSelector:       map[string]string{hyperv1.PodNetworkNodeLabel: "true"},
					// The node is not ready until the pod network is.
					Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
					Containers: []corev1.Container{{
						Name:  podNetworkName,
						Image: in.PodNetworkImage,
						Command: []string{"/usr/bin/hypershift-machine", "pod-network",
							"--kubeconfig=" + podNetworkConfig + "/kubeconfig.conf",
							"--cluster-network=" + clusterNetwork.String(),
							"--node-name=$(NODE_NAME)"},
						Env: []corev1.EnvVar{{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{
							FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"},
						}}},
						// It programs the machine's links, routes and
						// iptables, and writes its CNI configuration.
						SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true), RunAsUser: ptr.To(int64(0)), RunAsNonRoot: ptr.To(false)},
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("24Mi"),
						}},
						VolumeMounts: []corev1.VolumeMount{
							{Name: "config", MountPath: podNetworkConfig, ReadOnly: true},
							{Name: "cni-config", MountPath: cniConfigDir},
							{Name: "xtables-lock", MountPath: "/run/xtables.lock"},
						},
					}},
					Volumes: []corev1.Volume{
						{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: podNetworkName},
						}}},
						hostPath("cni-config", cniConfigDir, corev1.HostPathDirectoryOrCreate),
						hostPath("xtables-lock", "/run/xtables.lock", corev1.HostPathFileOrCreate),
					},
				},
			},
		},
	}
	return []client.Object{
		&corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}, ObjectMeta: meta(ns, podNetworkName, labels)},
		role,
		serviceAccountBinding("hypershift:pod-network", role.Name, ns, podNetworkName),
		&corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: meta(ns, podNetworkName, labels),
			Data:       map[string]string{"kubeconfig.conf": endpointKubeconfig(endpoint, podNetworkName)},
		},
		ds,
	}, nil
}

// firstIPv4ClusterNetwork is the pod network's range: the hosted
// cluster's first IPv4 cluster network.
func firstIPv4ClusterNetwork(hcp *hyperv1.HostedControlPlane) (netip.Prefix, error) {
	for _, n := range hcp.Spec.Networking.ClusterNetwork {
		if p, err := netip.ParsePrefix(n.CIDR); err == nil && p.Addr().Is4() {
			return p.Masked(), nil
		}
	}
	return netip.Prefix{}, fmt.Errorf("the hosted cluster has no IPv4 cluster network: the pod network of machines of platform Pod is IPv4 only")
}
