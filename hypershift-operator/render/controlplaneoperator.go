package render

import (
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/rbac"
	"github.com/hypershift-le/hypershift/support/operatordeployment"
	"github.com/hypershift-le/hypershift/support/podspec"
)

// appLabel selects the CPO's pods; a Deployment's selector cannot change.
const appLabel = "app"

// controlPlaneOperatorSelector selects the CPO's pods.
func controlPlaneOperatorSelector() map[string]string {
	return map[string]string{appLabel: hyperv1.ControlPlaneOperatorName}
}

// ControlPlaneOperatorServiceAccount is the CPO's identity.
func ControlPlaneOperatorServiceAccount(in Inputs) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: in.objectMeta(hyperv1.ControlPlaneOperatorName),
	}
}

// ControlPlaneOperatorRole grants the CPO what it needs in its namespace,
// its Lease included, and nothing more: on platform Pod, the machines too.
func ControlPlaneOperatorRole(in Inputs) *rbacv1.Role {
	rules := rbac.ControlPlaneOperatorRules()
	if in.HostedCluster.Spec.Platform.Type == hyperv1.PodPlatform {
		rules = rbac.PodPlatformControlPlaneOperatorRules()
	}
	return &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "Role"},
		ObjectMeta: in.objectMeta(hyperv1.ControlPlaneOperatorName),
		Rules:      rules,
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

// ControlPlaneOperatorDisruptionBudget lets a drain evict one CPO pod at a
// time when there are two (HighlyAvailable): the other, the standby or the
// leader, stays, and an evicted leader releases its Lease on SIGTERM, so
// the standby leads at once. A single replica gets none (nil): a budget
// of one unavailable would guard nothing, one of none would block every
// drain of its node.
func ControlPlaneOperatorDisruptionBudget(in Inputs) *policyv1.PodDisruptionBudget {
	if ControlPlaneOperatorReplicas(in.HostedCluster.Spec.ControllerAvailabilityPolicy) < 2 {
		return nil
	}
	return &policyv1.PodDisruptionBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: policyv1.SchemeGroupVersion.String(), Kind: "PodDisruptionBudget"},
		ObjectMeta: in.objectMeta(hyperv1.ControlPlaneOperatorName),
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			Selector:       &metav1.LabelSelector{MatchLabels: controlPlaneOperatorSelector()},
			// A replica that is not ready leads nothing: evicting it never
			// waits.
			UnhealthyPodEvictionPolicy: ptr.To(policyv1.AlwaysAllow),
		},
	}
}

// ControlPlaneOperatorDeployment runs the CPO with leader election on. Its
// strategy is Recreate, so a rollout stops the old CPO before the new one
// starts; the Lease guards what Recreate cannot (a replaced pod whose
// predecessor still terminates, a second replica).
func ControlPlaneOperatorDeployment(in Inputs) *appsv1.Deployment {
	strategy := appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	if unsafeNoElection {
		surge, unavailable := intstr.FromInt32(1), intstr.FromInt32(0)
		strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable}}
	}
	args := []string{"--hosted-control-plane=" + in.HostedCluster.Name}
	if platform := in.HostedCluster.Spec.Platform.Type; platform != hyperv1.NonePlatform {
		args = append(args, "--platform="+string(platform))
	}
	if level, ok := in.HostedCluster.Annotations[hyperv1.ControlPlaneOperatorLogLevelAnnotation]; ok {
		args = append(args, "--zap-log-level="+level)
	}
	if len(in.InsecureRegistries) > 0 {
		args = append(args, "--insecure-registries="+strings.Join(in.InsecureRegistries, ","))
	}
	return operatordeployment.Render(operatordeployment.Spec{
		Meta:     in.objectMeta(hyperv1.ControlPlaneOperatorName),
		Selector: controlPlaneOperatorSelector(),
		Replicas: ControlPlaneOperatorReplicas(in.HostedCluster.Spec.ControllerAvailabilityPolicy),
		// HighlyAvailable: the standby on another node than the leader.
		SpreadOverNodes: true,
		Image:           in.ControlPlaneOperatorImage,
		PullPolicy:      corev1.PullIfNotPresent,
		Binary:          "/usr/bin/control-plane-operator",
		Namespace:       "$(MY_NAMESPACE)",
		LeaderElect:     !unsafeNoElection,
		Timings:         in.ControlPlaneOperatorTimings,
		LeaseName:       hyperv1.ControlPlaneOperatorLeaseName,
		Args:            args,
		Env: []corev1.EnvVar{
			podspec.FieldEnv("MY_NAMESPACE", "metadata.namespace"),
			{Name: hyperv1.OperateOnReleaseImageEnv, Value: in.ReleaseImage},
		},
		Memory:        "64Mi",
		LivenessDelay: 30,
		PullSecrets:   []string{hyperv1.PullSecretName},
		Strategy:      strategy,
	})
}
