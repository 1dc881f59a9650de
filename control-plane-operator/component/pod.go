package component

import (
	"fmt"
	"sort"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/podspec"
	"github.com/hypershift-le/hypershift/support/resources"
)

// PodIPEnv holds, in every component's container, the pod's IP address
// from the downward API: processes listen on it rather than on every
// interface. hyperv1.PodNameEnv holds the pod's name; arguments refer to
// them as $(POD_IP) and $(POD_NAME).
const PodIPEnv = "POD_IP"

// Container returns a component's container running image with command
// and args, under Pod Security "restricted", with resources (Inputs.Resources).
func Container(name, image string, command, args []string, resources corev1.ResourceRequirements) corev1.Container {
	return corev1.Container{
		Name:            name,
		Image:           image,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         command,
		Args:            args,
		Env: []corev1.EnvVar{
			podspec.FieldEnv(hyperv1.PodNameEnv, "metadata.name"),
			podspec.FieldEnv(PodIPEnv, "status.podIP"),
		},
		Resources:                resources,
		SecurityContext:          podspec.RestrictedContainerSecurityContext(),
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
}

// PodSpec returns a component's pod spec under Pod Security "restricted",
// without a service account token, pulling with the control plane's pull
// secret.
func PodSpec(hcp *hyperv1.HostedControlPlane, container corev1.Container, volumes ...corev1.Volume) corev1.PodSpec {
	pod := corev1.PodSpec{
		AutomountServiceAccountToken: ptr.To(false),
		SecurityContext:              podspec.RestrictedPodSecurityContext(),
		Containers:                   []corev1.Container{container},
		Volumes:                      volumes,
	}
	if name := hcp.Spec.PullSecret.Name; name != "" {
		pod.ImagePullSecrets = []corev1.LocalObjectReference{{Name: name}}
	}
	return pod
}

// SecretVolume mounts the Secret secret as volume name, all of its keys or
// only items.
func SecretVolume(name, secret string, items ...string) corev1.Volume {
	source := &corev1.SecretVolumeSource{SecretName: secret}
	for _, key := range items {
		source.Items = append(source.Items, corev1.KeyToPath{Key: key, Path: key})
	}
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: source}}
}

// Mount mounts volume name read-only at path, an absolute directory.
func Mount(name, path string) corev1.VolumeMount {
	return corev1.VolumeMount{Name: name, MountPath: path, ReadOnly: true}
}

// TCPPort is a named container port.
func TCPPort(name string, port int32) corev1.ContainerPort {
	return corev1.ContainerPort{Name: name, ContainerPort: port, Protocol: corev1.ProtocolTCP}
}

// Flag returns --name=v1,v2,..., or nothing when there are no values, so
// that the component's default applies.
func Flag(name string, values []string) []string {
	if len(values) == 0 {
		return nil
	}
	return []string{"--" + name + "=" + strings.Join(values, ",")}
}

// ServiceNetwork returns the hosted cluster's Service CIDRs.
func ServiceNetwork(hcp *hyperv1.HostedControlPlane) []string {
	var cidrs []string
	for _, n := range hcp.Spec.Networking.ServiceNetwork {
		cidrs = append(cidrs, n.CIDR)
	}
	return cidrs
}

// ClusterNetwork returns the hosted cluster's Pod CIDRs.
func ClusterNetwork(hcp *hyperv1.HostedControlPlane) []string {
	var cidrs []string
	for _, n := range hcp.Spec.Networking.ClusterNetwork {
		cidrs = append(cidrs, n.CIDR)
	}
	return cidrs
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
	values := map[string]bool{}
	for _, name := range cfg.FeatureGate.CustomNoUpgrade.Enabled {
		values[string(name)] = true
	}
	for _, name := range cfg.FeatureGate.CustomNoUpgrade.Disabled {
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

// ConfigMapVolume mounts the ConfigMap configMap as volume name, all of
// its keys or only items.
func ConfigMapVolume(name, configMap string, items ...string) corev1.Volume {
	source := &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: configMap}}
	for _, key := range items {
		source.Items = append(source.Items, corev1.KeyToPath{Key: key, Path: key})
	}
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{ConfigMap: source}}
}

// Resources are the resources of container of workload: d, with the
// requests the HostedControlPlane's resource-request-override annotation
// for them overrides (support/resources.For); an annotation that does not
// parse is an error in the user's words.
func (in Inputs) Resources(workload, container string, d resources.Defaults) (corev1.ResourceRequirements, error) {
	return resources.For(in.HostedControlPlane.Annotations, workload, container, d)
}
