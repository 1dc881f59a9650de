// Package podspec holds the pieces of pod templates every renderer of the
// project shares: the Pod Security "restricted" security contexts and HTTP
// probes, and the spread of replicas over nodes, so a hardening change is
// made once.
package podspec

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// RestrictedPodSecurityContext is the pod-level part of Pod Security
// "restricted": non-root, RuntimeDefault seccomp.
func RestrictedPodSecurityContext() *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(true),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// RestrictedContainerSecurityContext is the container-level part: no
// privilege escalation, no capabilities, a read-only root filesystem.
func RestrictedContainerSecurityContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		ReadOnlyRootFilesystem:   ptr.To(true),
		RunAsNonRoot:             ptr.To(true),
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// FieldEnv is the environment variable name set from the pod's field
// fieldPath by the downward API (metadata.name, status.podIP, ...).
func FieldEnv(name, fieldPath string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: fieldPath},
	}}
}

// StartupWindow is how long a component may take to start (to pass its
// startup probe the first time) before its kubelet restarts it.
const StartupWindow = 5 * time.Minute

// StartupProbe gets path on the named port with scheme every second until
// it first succeeds, for up to StartupWindow. Until then the kubelet runs
// neither the liveness nor the readiness probe; right after, it runs the
// readiness probe at once (a container started with a readiness result
// unknown triggers it), so a component is Ready about a second after it
// first serves, whatever its readiness probe's period, and neither probe
// needs an initial delay to wait out a slow start. It costs one request a
// second only while the component starts.
func StartupProbe(path, port string, scheme corev1.URIScheme) *corev1.Probe {
	return HTTPProbe(path, port, scheme, 0, 1, int32(StartupWindow/time.Second))
}

// HTTPProbe gets path on the named port with scheme, every period seconds
// after initialDelay, failing after failures misses (5s timeout each).
func HTTPProbe(path, port string, scheme corev1.URIScheme, initialDelay, period, failures int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: path, Port: intstr.FromString(port), Scheme: scheme,
		}},
		InitialDelaySeconds: initialDelay,
		PeriodSeconds:       period,
		TimeoutSeconds:      5,
		FailureThreshold:    failures,
		SuccessThreshold:    1,
	}
}

// Spread places replicas of the pods selector selects on different nodes,
// so that losing one node loses one of them: a hard rule across nodes
// (maxSkew 1: on three nodes, one of three each), which never holds a pod
// back when there are fewer nodes than replicas (one node is one domain,
// skew 0), counting only the nodes the pods may run on (taints honoured: a
// control-plane or cordoned node is no domain that would stay empty), and
// a preference across zones where nodes carry them (a hard rule there
// would keep the pods off nodes without a zone). Nil for one replica.
func Spread(selector map[string]string, replicas int32) []corev1.TopologySpreadConstraint {
	if replicas <= 1 {
		return nil
	}
	constraint := func(key string, when corev1.UnsatisfiableConstraintAction) corev1.TopologySpreadConstraint {
		return corev1.TopologySpreadConstraint{
			MaxSkew: 1, TopologyKey: key, WhenUnsatisfiable: when,
			LabelSelector:    &metav1.LabelSelector{MatchLabels: selector},
			NodeTaintsPolicy: ptr.To(corev1.NodeInclusionPolicyHonor),
		}
	}
	return []corev1.TopologySpreadConstraint{
		constraint(corev1.LabelHostname, corev1.DoNotSchedule),
		constraint(corev1.LabelTopologyZone, corev1.ScheduleAnyway),
	}
}
