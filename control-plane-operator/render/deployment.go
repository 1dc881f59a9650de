package render

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/hypershift-le/hypershift/support/podspec"
)

// Ports the components listen on.
const (
	// EtcdClientPort serves etcd's clients, kube-apiserver among them.
	EtcdClientPort = 2379
	// EtcdMetricsPort serves etcd's metrics and /health over plain HTTP.
	EtcdMetricsPort = 2381
	// KubeAPIServerPort serves the hosted cluster's API.
	KubeAPIServerPort = 6443
	// KubeControllerManagerPort serves kube-controller-manager's /healthz.
	KubeControllerManagerPort = 10257
	// KubeSchedulerPort serves kube-scheduler's /healthz.
	KubeSchedulerPort = 10259
)

const (
	etcdClientPortName    = "client"
	etcdMetricsPortName   = "metrics"
	kubeAPIServerPortName = "https"

	etcdDataDir = "/var/lib/etcd"
	tmpDir      = "/tmp"
)

// layout is what sets one component's container apart from the others.
type layout struct {
	command     []string
	ports       []corev1.ContainerPort
	probePort   string
	probeScheme corev1.URIScheme
	liveness    string
	readiness   string
	cpu         string
	memory      string
	volume      string
	mountPath   string
}

// layoutOf returns a component's layout. The hyperkube components differ
// only in their port and requests.
func layoutOf(component string) layout {
	if component == Etcd {
		return layout{
			command: []string{"/usr/bin/etcd"},
			ports: []corev1.ContainerPort{
				tcpPort(etcdClientPortName, EtcdClientPort),
				tcpPort(etcdMetricsPortName, EtcdMetricsPort),
			},
			probePort: etcdMetricsPortName, probeScheme: corev1.URISchemeHTTP,
			liveness: "/health", readiness: "/health",
			cpu: "100m", memory: "512Mi",
			volume: "data", mountPath: etcdDataDir,
		}
	}
	l := layout{
		command:     []string{"/usr/bin/hyperkube", component},
		probePort:   "https",
		probeScheme: corev1.URISchemeHTTPS,
		liveness:    "/healthz", readiness: "/healthz",
		volume: "tmp", mountPath: tmpDir,
	}
	switch component {
	case KubeAPIServer:
		l.ports = []corev1.ContainerPort{tcpPort(kubeAPIServerPortName, KubeAPIServerPort)}
		l.liveness, l.readiness = "/livez", "/readyz"
		l.cpu, l.memory = "100m", "512Mi"
	case KubeControllerManager:
		l.ports = []corev1.ContainerPort{tcpPort("https", KubeControllerManagerPort)}
		l.cpu, l.memory = "50m", "256Mi"
	case KubeScheduler:
		l.ports = []corev1.ContainerPort{tcpPort("https", KubeSchedulerPort)}
		l.cpu, l.memory = "10m", "64Mi"
	}
	return l
}

// strategy rolls etcd by recreating it, so that two generations never share
// a member's data. The hyperkube components roll: with several replicas
// (HighlyAvailable) an old replica goes before a new one comes, so the
// rollout needs no room beyond the policy's replicas; with one, the
// Deployment defaults surge the new pod before the old one goes.
func strategy(component string, replicas int32) appsv1.DeploymentStrategy {
	if component == Etcd {
		return appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	}
	s := appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType}
	if replicas > 1 {
		s.RollingUpdate = &appsv1.RollingUpdateDeployment{
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			MaxSurge:       ptr.To(intstr.FromInt32(0)),
		}
	}
	return s
}

// deployment runs a component under Pod Security "restricted", without a
// service account token.
func deployment(in Inputs, component, image string) *appsv1.Deployment {
	hcp := in.HostedControlPlane
	l := layoutOf(component)
	replicas := Replicas(component, hcp.Spec.ControllerAvailabilityPolicy)
	container := corev1.Container{
		Name:            component,
		Image:           image,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         l.command,
		Args:            args(hcp, component),
		Env:             []corev1.EnvVar{{Name: HostedControlPlaneEnv, Value: hcp.Name}},
		Ports:           l.ports,
		LivenessProbe:   podspec.HTTPProbe(l.liveness, l.probePort, l.probeScheme, 30, 10, 5),
		ReadinessProbe:  podspec.HTTPProbe(l.readiness, l.probePort, l.probeScheme, 5, 10, 3),
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse(l.cpu),
			corev1.ResourceMemory: resource.MustParse(l.memory),
		}},
		SecurityContext:          podspec.RestrictedContainerSecurityContext(),
		VolumeMounts:             []corev1.VolumeMount{{Name: l.volume, MountPath: l.mountPath}},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
	pod := corev1.PodSpec{
		AutomountServiceAccountToken: ptr.To(false),
		SecurityContext:              podspec.RestrictedPodSecurityContext(),
		Containers:                   []corev1.Container{container},
		Volumes: []corev1.Volume{{
			Name:         l.volume,
			VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}},
		}},
	}
	if name := hcp.Spec.PullSecret.Name; name != "" {
		pod.ImagePullSecrets = []corev1.LocalObjectReference{{Name: name}}
	}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: appsv1.SchemeGroupVersion.String(), Kind: "Deployment"},
		ObjectMeta: in.objectMeta(component),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: selector(component)},
			Strategy: strategy(component, replicas),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels(component)},
				Spec:       pod,
			},
		},
	}
}

func tcpPort(name string, port int32) corev1.ContainerPort {
	return corev1.ContainerPort{Name: name, ContainerPort: port, Protocol: corev1.ProtocolTCP}
}
