package render

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	infrav1 "github.com/hypershift-le/hypershift/api/infrastructure/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/rbac"
	"github.com/hypershift-le/hypershift/support/operatordeployment"
	"github.com/hypershift-le/hypershift/support/podspec"
)

// The cluster-api manager of a HostedCluster of platform Pod: the
// hypershift-operator runs it in the control-plane namespace, as HyperShift
// does, under the rules of the control-plane-operator: leader election
// with the operator's timings (ClusterAPITimings), Recreate, least
// privilege (rbac.ClusterAPIRules in its namespace, and reading CRDs
// through rbac.ClusterAPIClusterRole), Pod Security "restricted". It
// watches its namespace only, with the controllers and feature gates of
// the kinds `hypershift install` installs (no MachinePools, ClusterClass
// or runtime extensions), and serves its webhooks nowhere: its CRDs are
// installed without them, so every object the hypershift-operator writes
// is complete (MachineDeployment's defaults included).

// Ports of the cluster-api manager's container.
const (
	clusterAPIHealthPort      = 9440
	clusterAPIDiagnosticsPort = 8443
	clusterAPIWebhookPort     = 9443
)

// ClusterAPIObjects are the objects of a HostedCluster's cluster-api
// manager and its Cluster, in apply order, then its MachineImageCache when
// the release names the images it needs; none unless its platform is Pod.
func ClusterAPIObjects(in Inputs) []client.Object {
	if in.HostedCluster.Spec.Platform.Type != hyperv1.PodPlatform {
		return nil
	}
	objects := []client.Object{
		ClusterAPIServiceAccount(in), ClusterAPIRole(in), ClusterAPIRoleBinding(in), ClusterAPIClusterRoleBinding(in),
		ClusterAPIDeployment(in), PodCluster(in), ClusterAPICluster(in),
	}
	if cache := MachineImageCache(in); cache != nil {
		objects = append(objects, cache)
	}
	return objects
}

// ClusterAPIServiceAccount is the cluster-api manager's identity.
func ClusterAPIServiceAccount(in Inputs) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: in.objectMeta(hyperv1.ClusterAPIName),
	}
}

// ClusterAPIRole grants the cluster-api manager what it does in its
// namespace.
func ClusterAPIRole(in Inputs) *rbacv1.Role {
	return &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "Role"},
		ObjectMeta: in.objectMeta(hyperv1.ClusterAPIName),
		Rules:      rbac.ClusterAPIRules(),
	}
}

// ClusterAPIRoleBinding binds the Role to the ServiceAccount.
func ClusterAPIRoleBinding(in Inputs) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
		ObjectMeta: in.objectMeta(hyperv1.ClusterAPIName),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: hyperv1.ClusterAPIName},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: in.Namespace(), Name: hyperv1.ClusterAPIName}},
	}
}

// ClusterAPIBindingName names the cluster-api manager's ClusterRoleBinding
// of control-plane namespace ns.
func ClusterAPIBindingName(ns string) string { return rbac.ClusterAPIBindingPrefix + ns }

// ClusterAPIClusterRoleBinding lets the cluster-api manager read CRDs
// (cluster-scoped: a RoleBinding cannot grant it; the teardown removes it).
func ClusterAPIClusterRoleBinding(in Inputs) *rbacv1.ClusterRoleBinding {
	meta := in.objectMeta(ClusterAPIBindingName(in.Namespace()))
	meta.Namespace = ""
	meta.Labels = map[string]string{ControlPlaneNamespaceLabel: in.Namespace()}
	return &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
		ObjectMeta: meta,
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: rbac.ClusterAPIClusterRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: in.Namespace(), Name: hyperv1.ClusterAPIName}},
	}
}

// ClusterAPIDeployment runs the cluster-api manager: one replica (a
// standby would only wait), Recreate, elected with ClusterAPITimings.
func ClusterAPIDeployment(in Inputs) *appsv1.Deployment {
	selector := map[string]string{appLabel: hyperv1.ClusterAPIName}
	t := in.ClusterAPITimings
	args := []string{
		"--namespace=$(MY_NAMESPACE)",
		"--leader-elect=true",
		"--leader-elect-lease-duration=" + t.LeaseDuration.String(),
		"--leader-elect-renew-deadline=" + t.RenewDeadline.String(),
		"--leader-elect-retry-period=" + t.RetryPeriod.String(),
		// What `hypershift install` installs: no MachinePools, and no
		// MachineSet preflight checks (they judge kubeadm control planes).
		// No reconciler rate limiting: it holds every object to one
		// reconcile a second, which guards a manager of hundreds of
		// clusters against hot loops but here, for the few objects of one
		// hosted cluster, put 4 of a new machine's 11 s between the
		// MachineDeployment and its Machine (finalizer, then paused
		// condition, then the next object, a second apart; make
		// bench-nodepools). Failures still back off (controller-runtime's
		// rate limiter).
		"--feature-gates=MachinePool=false,MachineSetPreflightChecks=false,ReconcilerRateLimiting=false",
		// Its CRDs' storage versions are `hypershift install`'s to manage.
		"--skip-crd-migration-phases=StorageVersionMigration",
		"--skip-crd-migration-phases=CleanupManagedFields",
		// Workers of one hosted cluster: cluster-api's defaults are sized
		// for a management cluster of hundreds of clusters.
		"--cluster-concurrency=2", "--clustercache-concurrency=2", "--machine-concurrency=10",
		"--machineset-concurrency=5", "--machinedeployment-concurrency=5", "--machinehealthcheck-concurrency=5",
		"--clusterresourceset-concurrency=1",
		fmt.Sprintf("--health-addr=:%d", clusterAPIHealthPort),
		fmt.Sprintf("--diagnostics-address=:%d", clusterAPIDiagnosticsPort),
		fmt.Sprintf("--webhook-port=%d", clusterAPIWebhookPort),
		"--webhook-cert-dir=/tmp/k8s-webhook-server/serving-certs",
	}
	container := corev1.Container{
		Name:            hyperv1.ClusterAPIName,
		Image:           in.ClusterAPIImage,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         []string{"/usr/bin/cluster-api"},
		Args:            args,
		Env:             []corev1.EnvVar{podspec.FieldEnv("MY_NAMESPACE", "metadata.namespace")},
		Ports: []corev1.ContainerPort{
			{Name: "health", ContainerPort: clusterAPIHealthPort, Protocol: corev1.ProtocolTCP},
			{Name: "diagnostics", ContainerPort: clusterAPIDiagnosticsPort, Protocol: corev1.ProtocolTCP},
		},
		LivenessProbe:  podspec.HTTPProbe("/healthz", "health", corev1.URISchemeHTTP, 30, 10, 3),
		ReadinessProbe: podspec.HTTPProbe("/readyz", "health", corev1.URISchemeHTTP, 5, 10, 3),
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("64Mi"),
		}},
		SecurityContext:          podspec.RestrictedContainerSecurityContext(),
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		VolumeMounts:             []corev1.VolumeMount{{Name: "webhook-tls", MountPath: "/tmp/k8s-webhook-server/serving-certs", ReadOnly: true}},
	}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: appsv1.SchemeGroupVersion.String(), Kind: "Deployment"},
		ObjectMeta: in.objectMeta(hyperv1.ClusterAPIName),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			// The old manager stops before the new one starts; its Lease
			// guards what Recreate cannot.
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: selector},
				Spec: corev1.PodSpec{
					ServiceAccountName:            hyperv1.ClusterAPIName,
					AutomountServiceAccountToken:  ptr.To(true),
					TerminationGracePeriodSeconds: ptr.To(int64((t.RenewDeadline + operatordeployment.ReleaseGrace).Seconds())),
					SecurityContext:               podspec.RestrictedPodSecurityContext(),
					ImagePullSecrets:              []corev1.LocalObjectReference{{Name: hyperv1.PullSecretName}},
					Containers:                    []corev1.Container{container},
					// The Secret's default mode, as the control plane's: the
					// container runs as a user of the image, not root.
					Volumes: []corev1.Volume{{Name: "webhook-tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
						SecretName: hyperv1.ClusterAPIWebhookSecretName,
					}}}},
				},
			},
		},
	}
}

// PodCluster is the infrastructure of the HostedCluster's cluster-api
// Cluster: the management cluster, which the control-plane-operator marks
// provisioned.
func PodCluster(in Inputs) *infrav1.PodCluster {
	return &infrav1.PodCluster{
		TypeMeta:   metav1.TypeMeta{APIVersion: infrav1.GroupVersion.String(), Kind: "PodCluster"},
		ObjectMeta: in.objectMeta(in.HostedCluster.Name),
	}
}

// ClusterAPICluster is the HostedCluster's cluster-api Cluster, named as
// the HostedCluster: its infrastructure the PodCluster, its control plane
// the HostedControlPlane (which keeps cluster-api's control plane
// contract), its workers the NodePools' MachineDeployments.
func ClusterAPICluster(in Inputs) *clusterv1.Cluster {
	return &clusterv1.Cluster{
		TypeMeta:   metav1.TypeMeta{APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster"},
		ObjectMeta: in.objectMeta(in.HostedCluster.Name),
		Spec: clusterv1.ClusterSpec{
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: infrav1.GroupVersion.Group, Kind: "PodCluster", Name: in.HostedCluster.Name},
			ControlPlaneRef:   clusterv1.ContractVersionedObjectReference{APIGroup: hyperv1.GroupVersion.Group, Kind: "HostedControlPlane", Name: in.HostedCluster.Name},
		},
	}
}
