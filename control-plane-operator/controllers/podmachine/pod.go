package podmachine

import (
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	infrav1 "github.com/hypershift-le/hypershift/api/infrastructure/v1beta1"
	"github.com/hypershift-le/hypershift/control-plane-operator/pki"
)

// MachineLabel names, on a machine's Pod, its PodMachine.
const MachineLabel = infrav1.MachinePodLabel

// machinePods are the labels every machine's Pod has.
var machinePods = map[string]string{"app": "machine"}

// PodCache caches, of the control-plane namespace's Pods, the machines'.
var PodCache = cache.ByObject{Label: labels.SelectorFromSet(machinePods)}

// ProviderID is the ID of the machine of PodMachine namespace/name, which
// its kubelet registers its Node with.
func ProviderID(namespace, name string) string { return "pod://" + namespace + "/" + name }

// Paths of the machine's volumes (package hypershift-machine/boot reads them there).
const (
	joinDir       = "/etc/hypershift/join"
	pullSecretDir = "/etc/hypershift/pull-secret"
	podNetworkDir = "/etc/hypershift/pod-network"
)

// MachinePod is the Pod that is machine m: the machine image, privileged
// (it runs containerd and the kubelet), joining with the bootstrap data
// Secret joinSecret, pulling with the pull secret pullSecret. Its disks
// (/var/lib, /run, /var/log) are emptyDir volumes: a restart of its
// container is the machine's reboot, the Pod's deletion the machine's end.
// The machine runs its part of the hosted cluster's pod network (pod
// subnet podNetwork) itself, with the pod network's kubeconfig of the
// hosted cluster (pki.PodNetworkKubeconfigSecret). It has no credentials
// of the management cluster.
func MachinePod(m *infrav1.PodMachine, joinSecret, pullSecret string, podNetwork netip.Prefix) *corev1.Pod {
	args := []string{
		"--name=" + m.Name,
		"--address=$(MACHINE_ADDRESS)",
		"--provider-id=" + ProviderID(m.Namespace, m.Name),
		"--sandbox-image=" + m.Spec.SandboxImage,
		"--node-labels=" + hyperv1.PodNetworkNodeLabel + "=true," + hyperv1.PodNetworkAgentLabel + "=" + hyperv1.PodNetworkAgentInMachine,
		"--pod-network-kubeconfig=" + podNetworkDir + "/" + pki.KubeconfigKey,
		"--cluster-network=" + podNetwork.String(),
	}
	if len(m.Spec.InsecureRegistries) > 0 {
		args = append(args, "--insecure-registries="+strings.Join(m.Spec.InsecureRegistries, ","))
	}
	emptyDir := func(name string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	}
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: m.Namespace,
			Name:      m.Name,
			Labels:    map[string]string{MachineLabel: m.Name, "app": machinePods["app"]},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: infrav1.GroupVersion.String(), Kind: "PodMachine", Name: m.Name, UID: m.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: corev1.PodSpec{
			// The machine's hostname is its name, as its Node's.
			Hostname:                     m.Name,
			AutomountServiceAccountToken: ptr.To(false),
			EnableServiceLinks:           ptr.To(false),
			RestartPolicy:                corev1.RestartPolicyAlways,
			// The kubelet stops its containers within this; the rest goes
			// with the Pod's namespaces.
			TerminationGracePeriodSeconds: ptr.To(int64(30)),
			ImagePullSecrets:              []corev1.LocalObjectReference{{Name: pullSecret}},
			Containers: []corev1.Container{{
				Name:            "machine",
				Image:           m.Spec.Image,
				ImagePullPolicy: corev1.PullIfNotPresent,
				Args:            args,
				Env: []corev1.EnvVar{{Name: "MACHINE_ADDRESS", ValueFrom: &corev1.EnvVarSource{
					FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"},
				}}},
				// A node: it mounts, makes cgroups and network devices.
				SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true), RunAsUser: ptr.To(int64(0)), RunAsNonRoot: ptr.To(false)},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					// containerd and the kubelet of an idle machine: about
					// 190 MiB (make bench-nodepools).
					corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("200Mi"),
				}},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "join", MountPath: joinDir, ReadOnly: true},
					{Name: "pull-secret", MountPath: pullSecretDir, ReadOnly: true},
					{Name: "pod-network", MountPath: podNetworkDir, ReadOnly: true},
					{Name: "var-lib", MountPath: "/var/lib"},
					{Name: "run", MountPath: "/run"},
					{Name: "var-log", MountPath: "/var/log"},
				},
			}},
			Volumes: []corev1.Volume{
				{Name: "join", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: joinSecret, DefaultMode: ptr.To(int32(0o400))}}},
				{Name: "pull-secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
					SecretName: pullSecret, DefaultMode: ptr.To(int32(0o400)), Optional: ptr.To(true),
				}}},
				{Name: "pod-network", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
					SecretName: pki.PodNetworkKubeconfigSecret, DefaultMode: ptr.To(int32(0o400)),
				}}},
				emptyDir("var-lib"), emptyDir("run"), emptyDir("var-log"),
			},
		},
	}
}
