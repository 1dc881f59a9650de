package render

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/rbac"
	"github.com/hypershift-le/hypershift/support/podspec"
)

const (
	// MetricsPort is where the CPO serves metrics.
	MetricsPort = 8080
	// HealthPort is where the CPO serves its health and readiness probes.
	HealthPort = 8081

	// appLabel selects the CPO's pods; a Deployment's selector cannot change.
	appLabel = "app"

	// releaseGrace is the time the CPO gets, beyond its renew deadline, to
	// finish in-flight reconciles and release the Lease on SIGTERM.
	releaseGrace = 20 * time.Second
)

// unsafeNoElection renders the CPO without leader election and with a
// surging RollingUpdate. Only a build with -tags e2eunsafe sets it.
var unsafeNoElection = false

// ControlPlaneOperatorServiceAccount is the CPO's identity.
func ControlPlaneOperatorServiceAccount(in Inputs) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: in.objectMeta(hyperv1.ControlPlaneOperatorName),
	}
}

// ControlPlaneOperatorRole grants the CPO what it needs in its namespace,
// its Lease included, and nothing more.
func ControlPlaneOperatorRole(in Inputs) *rbacv1.Role {
	return &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "Role"},
		ObjectMeta: in.objectMeta(hyperv1.ControlPlaneOperatorName),
		Rules:      rbac.ControlPlaneOperatorRules(),
	}
}

// ControlPlaneOperatorRoleBinding binds the Role to the ServiceAccount.
func ControlPlaneOperatorRoleBinding(in Inputs) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
		ObjectMeta: in.objectMeta(hyperv1.ControlPlaneOperatorName),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: hyperv1.ControlPlaneOperatorName},
		Subjects: []rbacv1.Subject{{
			Kind: rbacv1.ServiceAccountKind, Namespace: in.Namespace(), Name: hyperv1.ControlPlaneOperatorName,
		}},
	}
}

// ControlPlaneOperatorReplicas is 1 for SingleReplica and 2 for
// HighlyAvailable: a standby that takes over when the leader goes.
func ControlPlaneOperatorReplicas(policy hyperv1.AvailabilityPolicy) int32 {
	if policy == hyperv1.HighlyAvailable {
		return 2
	}
	return 1
}

// ControlPlaneOperatorDeployment runs the CPO with leader election on. Its
// strategy is Recreate, so a rollout stops the old CPO before the new one
// starts; the Lease guards what Recreate cannot (a replaced pod whose
// predecessor still terminates, a second replica).
func ControlPlaneOperatorDeployment(in Inputs) *appsv1.Deployment {
	le := in.Election
	labels := map[string]string{appLabel: hyperv1.ControlPlaneOperatorName}
	grace := int64((le.RenewDeadline + releaseGrace).Seconds())
	args := append([]string{"run", "--namespace=$(MY_NAMESPACE)", "--leader-elect=true"}, le.Args("")...)
	args = append(args, "--hosted-control-plane="+in.HostedCluster.Name)
	args = append(args,
		"--leader-elect-resource-name="+hyperv1.ControlPlaneOperatorLeaseName,
		fmt.Sprintf("--metrics-bind-address=:%d", MetricsPort),
		fmt.Sprintf("--health-probe-bind-address=:%d", HealthPort),
	)
	container := corev1.Container{
		Name:            hyperv1.ControlPlaneOperatorName,
		Image:           in.ControlPlaneOperatorImage,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         []string{"/usr/bin/control-plane-operator"},
		Args:            args,
		Env: []corev1.EnvVar{
			{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
			{Name: "MY_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}},
			{Name: hyperv1.OperateOnReleaseImageEnv, Value: in.ReleaseImage},
		},
		Ports: []corev1.ContainerPort{
			{Name: "metrics", ContainerPort: MetricsPort, Protocol: corev1.ProtocolTCP},
			{Name: "health", ContainerPort: HealthPort, Protocol: corev1.ProtocolTCP},
		},
		LivenessProbe:  podspec.HTTPProbe("/healthz", "health", corev1.URISchemeHTTP, 30, 10, 3),
		ReadinessProbe: podspec.HTTPProbe("/readyz", "health", corev1.URISchemeHTTP, 5, 10, 3),
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("10m"),
			corev1.ResourceMemory: resource.MustParse("64Mi"),
		}},
		SecurityContext:          podspec.RestrictedContainerSecurityContext(),
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
	strategy := appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	if unsafeNoElection {
		args[2] = "--leader-elect=false"
		surge, unavailable := intstr.FromInt32(1), intstr.FromInt32(0)
		strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable}}
	}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: appsv1.SchemeGroupVersion.String(), Kind: "Deployment"},
		ObjectMeta: in.objectMeta(hyperv1.ControlPlaneOperatorName),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(ControlPlaneOperatorReplicas(in.HostedCluster.Spec.ControllerAvailabilityPolicy)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Strategy: strategy,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName:            hyperv1.ControlPlaneOperatorName,
					AutomountServiceAccountToken:  ptr.To(true),
					ImagePullSecrets:              []corev1.LocalObjectReference{{Name: rbac.PullSecretName}},
					TerminationGracePeriodSeconds: ptr.To(grace),
					SecurityContext:               podspec.RestrictedPodSecurityContext(),
					Containers:                    []corev1.Container{container},
				},
			},
		},
	}
}
