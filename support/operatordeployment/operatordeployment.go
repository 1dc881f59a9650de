// Package operatordeployment renders the Deployment of an operator that runs
// under leader election: the hypershift-operator (rendered by `hypershift
// install`) and every control-plane-operator (rendered by the
// hypershift-operator). Both get the same pod: the election flags from one
// set of timings, a termination grace that outlasts the renew deadline so a
// stopping leader can release its Lease, its pod name as its identity,
// metrics and probes on the shared ports, and Pod Security "restricted".
package operatordeployment

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/config"
	"github.com/hypershift-le/hypershift/support/podspec"
)

// ReleaseGrace is the time an operator gets, beyond its renew deadline, to
// finish in-flight reconciles and release its Lease on SIGTERM.
const ReleaseGrace = 20 * time.Second

// Spec is what differs between the operators.
type Spec struct {
	// Meta names the Deployment; its ServiceAccount and container share
	// the name.
	Meta metav1.ObjectMeta
	// Selector labels the pods and selects them.
	Selector map[string]string
	// Replicas of the operator.
	Replicas int32
	// Image and PullPolicy of its container; Binary is the command.
	Image      string
	PullPolicy corev1.PullPolicy
	Binary     string
	// Namespace is the value of --namespace.
	Namespace string
	// LeaderElect renders --leader-elect; false only in the e2eunsafe
	// build's negative control.
	LeaderElect bool
	// Timings are the timings rendered as flags and the base of the
	// termination grace.
	Timings config.Timings
	// LeaseName renders --leader-elect-resource-name when set.
	LeaseName string
	// Args come after the election flags, before the lease name and the
	// serving addresses.
	Args []string
	// Env comes after POD_NAME.
	Env []corev1.EnvVar
	// Memory is the container's memory request.
	Memory string
	// LivenessDelay is the liveness probe's initial delay in seconds.
	LivenessDelay int32
	// PullSecrets name the pod's image pull secrets.
	PullSecrets []string
	// Strategy is the Deployment's strategy; empty is RollingUpdate.
	Strategy appsv1.DeploymentStrategy
	// SpreadOverNodes puts replicas on different nodes (podspec.Spread).
	SpreadOverNodes bool
}

// Render returns the Deployment.
func Render(s Spec) *appsv1.Deployment {
	args := []string{"run", "--namespace=" + s.Namespace, fmt.Sprintf("--leader-elect=%t", s.LeaderElect)}
	args = append(append(args, s.Timings.Args("")...), s.Args...)
	if s.LeaseName != "" {
		args = append(args, "--leader-elect-resource-name="+s.LeaseName)
	}
	args = append(args,
		fmt.Sprintf("--metrics-bind-address=:%d", hyperv1.MetricsPort),
		fmt.Sprintf("--health-probe-bind-address=:%d", hyperv1.HealthPort),
	)
	container := corev1.Container{
		Name:            s.Meta.Name,
		Image:           s.Image,
		ImagePullPolicy: s.PullPolicy,
		Command:         []string{s.Binary},
		Args:            args,
		Env:             append([]corev1.EnvVar{podspec.FieldEnv(hyperv1.PodNameEnv, "metadata.name")}, s.Env...),
		Ports: []corev1.ContainerPort{
			{Name: "metrics", ContainerPort: hyperv1.MetricsPort, Protocol: corev1.ProtocolTCP},
			{Name: "health", ContainerPort: hyperv1.HealthPort, Protocol: corev1.ProtocolTCP},
		},
		LivenessProbe:  podspec.HTTPProbe("/healthz", "health", corev1.URISchemeHTTP, s.LivenessDelay, 10, 3),
		ReadinessProbe: podspec.HTTPProbe("/readyz", "health", corev1.URISchemeHTTP, 5, 10, 3),
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("10m"),
			corev1.ResourceMemory: resource.MustParse(s.Memory),
		}},
		SecurityContext:          podspec.RestrictedContainerSecurityContext(),
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
	pod := corev1.PodSpec{
		ServiceAccountName:            s.Meta.Name,
		AutomountServiceAccountToken:  ptr.To(true),
		TerminationGracePeriodSeconds: ptr.To(int64((s.Timings.RenewDeadline + ReleaseGrace).Seconds())),
		SecurityContext:               podspec.RestrictedPodSecurityContext(),
		Containers:                    []corev1.Container{container},
	}
	for _, name := range s.PullSecrets {
		pod.ImagePullSecrets = append(pod.ImagePullSecrets, corev1.LocalObjectReference{Name: name})
	}
	if s.SpreadOverNodes {
		pod.TopologySpreadConstraints = podspec.Spread(s.Selector, s.Replicas)
	}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: appsv1.SchemeGroupVersion.String(), Kind: "Deployment"},
		ObjectMeta: s.Meta,
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(s.Replicas),
			Selector: &metav1.LabelSelector{MatchLabels: s.Selector},
			Strategy: s.Strategy,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: s.Selector},
				Spec:       pod,
			},
		},
	}
}
