// Package kubescheduler is the hosted cluster's kube-scheduler: a
// Deployment of one replica (SingleReplica) or two that elect a leader
// (HighlyAvailable), reaching the kube-apiserver with its own kubeconfig.
package kubescheduler

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/hypershift-le/hypershift/control-plane-operator/component"
	"github.com/hypershift-le/hypershift/control-plane-operator/components/kubeapiserver"
	"github.com/hypershift-le/hypershift/control-plane-operator/pki"
	"github.com/hypershift-le/hypershift/support/podspec"
	"github.com/hypershift-le/hypershift/support/resources"
)

const (
	// Name names the component and its Deployment.
	Name = "kube-scheduler"
	// ImageTag is the release payload tag of its image.
	ImageTag = "hyperkube"
	// Port serves /healthz.
	Port = 10259

	kubeconfigDir = "/etc/kubernetes/kubeconfig"

	highlyAvailableReplicas = 2
)

// Component is the kube-scheduler; it serves nothing to the others.
type Component struct{ component.NoServices }

var _ component.Component = Component{}

// Name implements component.Component.
func (Component) Name() string { return Name }

// DependsOn implements component.Component: it works through the
// kube-apiserver.
func (Component) DependsOn() []string { return []string{kubeapiserver.Name} }

// Resources are each replica's: its working set is 14-20 MiB idle (make
// bench-controlplanes, 10 control planes). The CPU request is what a
// converged one used, 4m (same run, mean over 2 minutes), with room.
var Resources = resources.Defaults{CPU: "5m", Memory: "32Mi", MemoryLimit: "256Mi"}

// Workload implements component.Component.
func (Component) Workload(in component.Inputs) (*component.Workload, error) {
	hcp := in.HostedControlPlane
	image, err := in.Image(Name, ImageTag)
	if err != nil {
		return nil, err
	}
	replicas := component.Replicas(hcp.Spec.ControllerAvailabilityPolicy, highlyAvailableReplicas)
	kubeconfig := kubeconfigDir + "/" + pki.KubeconfigKey
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
	}
	args = append(args, component.SecurePort(Port)...)
	args = append(args, component.LeaderElection(replicas)...)
	args = append(args, component.Flag("feature-gates", component.FeatureGates(hcp))...)

	res, err := in.Resources(Name, Name, Resources)
	if err != nil {
		return nil, err
	}
	container := component.Container(Name, image, []string{"/usr/bin/kube-scheduler"}, args, res)
	container.Ports = []corev1.ContainerPort{component.TCPPort("https", Port)}
	container.StartupProbe = podspec.StartupProbe("/healthz", "https", corev1.URISchemeHTTPS)
	container.LivenessProbe = podspec.HTTPProbe("/healthz", "https", corev1.URISchemeHTTPS, 0, 10, 5)
	container.ReadinessProbe = podspec.HTTPProbe("/healthz", "https", corev1.URISchemeHTTPS, 0, 10, 3)
	container.VolumeMounts = []corev1.VolumeMount{component.Mount("kubeconfig", kubeconfigDir)}
	pod := component.PodSpec(hcp, container, component.SecretVolume("kubeconfig", pki.KubeSchedulerKubeconfigSecret))
	return in.Deployment(Name, replicas, component.ControllerStrategy(replicas), pod, pki.KubeSchedulerKubeconfigSecret), nil
}
