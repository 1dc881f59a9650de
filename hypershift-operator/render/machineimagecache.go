package render

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/podspec"
)

// MachineImageCache keeps the machine image of the HostedCluster's release
// on every node of the management cluster, as HyperShift's KubeVirt
// platform caches its boot image: a machine's Pod then starts in about 2 s
// instead of pulling the image first (about 5.6 s of a new machine's 12 s
// on a node without it; make bench-nodepools). Each node runs one pod of
// it: an init container of the machine image that prints its version and
// exits (which is what pulls it, and what keeps the kubelet's image garbage
// collection from removing it while the pod stays), then the release's
// pause image, which holds the pod for under a MiB. A new release rolls
// every node at once: the pulls of the next machine image start before its
// NodePools roll. Nil when the release names no machine image (a payload
// without platform Pod's images) or the platform is not Pod.
func MachineImageCache(in Inputs) *appsv1.DaemonSet {
	if in.HostedCluster.Spec.Platform.Type != hyperv1.PodPlatform || in.MachineImage == "" || in.SandboxImage == "" {
		return nil
	}
	selector := map[string]string{appLabel: hyperv1.MachineImageCacheName}
	// The machine image runs as root (a machine is a privileged Pod);
	// printing a version needs no privilege.
	machine := corev1.Container{
		Name:                     "machine-image",
		Image:                    in.MachineImage,
		ImagePullPolicy:          corev1.PullIfNotPresent,
		Command:                  []string{"/usr/bin/hypershift-machine", "version"},
		SecurityContext:          podspec.RestrictedContainerSecurityContext(),
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		Resources:                machineImageCacheResources(),
	}
	machine.SecurityContext.RunAsUser = ptr.To(int64(65532))
	hold := corev1.Container{
		Name:                     "hold",
		Image:                    in.SandboxImage,
		ImagePullPolicy:          corev1.PullIfNotPresent,
		SecurityContext:          podspec.RestrictedContainerSecurityContext(),
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		Resources:                machineImageCacheResources(),
	}
	return &appsv1.DaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: appsv1.SchemeGroupVersion.String(), Kind: "DaemonSet"},
		ObjectMeta: in.objectMeta(hyperv1.MachineImageCacheName),
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			// A cache: nothing depends on one of its pods, so a new
			// release replaces them on every node at once.
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{
				Type:          appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptr.To(intstr.FromString("100%"))},
			},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: selector},
				Spec: corev1.PodSpec{
					AutomountServiceAccountToken:  ptr.To(false),
					EnableServiceLinks:            ptr.To(false),
					TerminationGracePeriodSeconds: ptr.To(int64(1)),
					SecurityContext:               podspec.RestrictedPodSecurityContext(),
					ImagePullSecrets:              []corev1.LocalObjectReference{{Name: hyperv1.PullSecretName}},
					InitContainers:                []corev1.Container{machine},
					Containers:                    []corev1.Container{hold},
				},
			},
		},
	}
}

// machineImageCacheResources are each container's: the pause program and
// a printed version use well under these.
func machineImageCacheResources() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1m"), corev1.ResourceMemory: resource.MustParse("8Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("32Mi")},
	}
}
