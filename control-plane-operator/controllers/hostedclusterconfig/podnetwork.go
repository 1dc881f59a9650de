package hostedclusterconfig

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/control-plane-operator/pki"
)

// PodNetworkImageTag is the release payload's image of the pod network of
// the machines of platform Pod.
const PodNetworkImageTag = "pod-network"

const (
	podNetworkName   = "pod-network"
	podNetworkConfig = "/var/lib/pod-network"
	cniConfigDir     = "/etc/cni/net.d"
)

// podNetwork lets the pod network of the machines of platform Pod read
// Nodes, and runs it on the machines that do not run it themselves. Each
// machine's part gives its pods their addresses from the Node's pod subnet
// and routes them to the other machines' (package
// hypershift-machine/podnetwork). A machine runs it in its own init
// (hyperv1.PodNetworkAgentLabel), as user pki.PodNetworkUser, from its
// first second: the node is Ready without waiting for a pod to be
// scheduled, pulled and started on it. Machines made before that get a
// DaemonSet in their network (hyperv1.PodNetworkNodeLabel without the
// agent label), as ServiceAccount pod-network. Both read Nodes, nothing
// else, at the kube-apiserver's published endpoint, as kube-proxy does:
// Services work only once the pod network does. No image in the payload,
// no pod network: the release has no machines of platform Pod.
func podNetwork(in DataPlaneInputs, endpoint *hyperv1.APIEndpoint) ([]client.Object, error) {
	if in.PodNetworkImage == "" {
		return nil, nil
	}
	clusterNetwork, err := in.HostedControlPlane.Spec.Networking.PodNetworkRange()
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
					// Not on a machine that runs the pod network itself.
					Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
						RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
							MatchExpressions: []corev1.NodeSelectorRequirement{{Key: hyperv1.PodNetworkAgentLabel, Operator: corev1.NodeSelectorOpDoesNotExist}},
						}}},
					}},
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
		podNetworkBinding(role.Name, ns),
		&corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: meta(ns, podNetworkName, labels),
			Data:       map[string]string{"kubeconfig.conf": endpointKubeconfig(endpoint, podNetworkName)},
		},
		ds,
	}, nil
}

// podNetworkBinding lets both kinds of the pod network read Nodes: the
// DaemonSet's ServiceAccount and the machines' user.
func podNetworkBinding(role, namespace string) *rbacv1.ClusterRoleBinding {
	b := serviceAccountBinding("hypershift:pod-network", role, namespace, podNetworkName)
	b.Subjects = append(b.Subjects, rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: pki.PodNetworkUser})
	return b
}
