// Package render computes, as pure functions of a HostedControlPlane and its
// release payload, the hosted control plane's components that the
// control-plane-operator applies: etcd, kube-apiserver,
// kube-controller-manager and kube-scheduler, each a Deployment and, when it
// is served, a Service. Controllers apply what these functions return; tests
// compare it with golden files.
//
// Only the replica counts (from the availability policy), the images (from
// the release payload) and, for the hyperkube components, the rollout
// strategy change with policy or release; everything else derives from the
// HostedControlPlane alone.
package render

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/releaseinfo"
)

// Names of the hosted control plane's components. Each names the component's
// Deployment, its Service when it has one, and its container.
const (
	// Etcd is the control plane's key-value store.
	Etcd = "etcd"
	// KubeAPIServer serves the hosted cluster's API.
	KubeAPIServer = "kube-apiserver"
	// KubeControllerManager runs the hosted cluster's core controllers.
	KubeControllerManager = "kube-controller-manager"
	// KubeScheduler places the hosted cluster's pods on its nodes.
	KubeScheduler = "kube-scheduler"
)

// Release payload tags the components' images come from.
const (
	// EtcdImageTag is the payload tag of the etcd image.
	EtcdImageTag = "etcd"
	// HyperkubeImageTag is the payload tag of the image that runs
	// kube-apiserver, kube-controller-manager and kube-scheduler.
	HyperkubeImageTag = "hyperkube"
)

const (
	// AppLabel selects a component's pods. It is the whole selector of the
	// component's Deployment and Service, so it must never change: a
	// Deployment's selector is immutable once created.
	AppLabel = "app"
	// ComponentLabel names the control plane component an object belongs to.
	ComponentLabel = "hypershift.openshift.io/control-plane-component"
	// HostedControlPlaneEnv is the environment variable that carries the
	// HostedControlPlane's name into every component's container.
	HostedControlPlaneEnv = "HOSTED_CONTROL_PLANE"
)

// ComponentNames lists the components in the order they are applied.
var ComponentNames = []string{Etcd, KubeAPIServer, KubeControllerManager, KubeScheduler}

// Inputs is everything the components of one hosted control plane depend on.
type Inputs struct {
	// HostedControlPlane is the control plane being rendered.
	HostedControlPlane *hyperv1.HostedControlPlane
	// Release is the release payload the components' images come from.
	Release *releaseinfo.ReleaseImage
}

// Component is one hosted control plane component.
type Component struct {
	// Name is one of ComponentNames.
	Name string
	// Deployment runs the component.
	Deployment *appsv1.Deployment
	// Service is nil unless the component is served (kube-apiserver, etcd).
	Service *corev1.Service
}

// Components renders every component, in the order of ComponentNames. It
// fails when an input is missing or the release payload lacks an image a
// component needs.
func Components(in Inputs) ([]Component, error) {
	if err := in.validate(); err != nil {
		return nil, err
	}
	components := make([]Component, 0, len(ComponentNames))
	for _, name := range ComponentNames {
		image, err := in.image(name)
		if err != nil {
			return nil, err
		}
		c := Component{Name: name, Deployment: deployment(in, name, image)}
		if port, ok := servicePort(name); ok {
			c.Service = service(in, name, port)
		}
		components = append(components, c)
	}
	return components, nil
}

// Replicas returns the replica count of a component under a policy:
// HighlyAvailable runs three etcd and kube-apiserver replicas and two of the
// leader-elected kube-controller-manager and kube-scheduler; SingleReplica,
// an unset policy or an unknown component runs one.
func Replicas(component string, policy hyperv1.AvailabilityPolicy) int32 {
	if policy != hyperv1.HighlyAvailable {
		return 1
	}
	switch component {
	case Etcd, KubeAPIServer:
		return 3
	case KubeControllerManager, KubeScheduler:
		return 2
	default:
		return 1
	}
}

// ImageTag returns the release payload tag a component's image comes from,
// or "" for an unknown component.
func ImageTag(component string) string {
	switch component {
	case Etcd:
		return EtcdImageTag
	case KubeAPIServer, KubeControllerManager, KubeScheduler:
		return HyperkubeImageTag
	default:
		return ""
	}
}

// validate refuses inputs the renderers must not turn into objects.
func (in Inputs) validate() error {
	if in.HostedControlPlane == nil {
		return fmt.Errorf("no HostedControlPlane to render")
	}
	if in.Release == nil {
		return fmt.Errorf("no release payload to render HostedControlPlane %s/%s from", in.HostedControlPlane.Namespace, in.HostedControlPlane.Name)
	}
	return nil
}

// image returns the pull spec of a component's image from the payload.
func (in Inputs) image(component string) (string, error) {
	tag := ImageTag(component)
	if tag == "" {
		return "", fmt.Errorf("unknown control plane component %q", component)
	}
	image, ok := in.Release.ComponentImage(tag)
	if !ok {
		return "", fmt.Errorf("release image %s has no %q image, needed by %s", in.releaseImage(), tag, component)
	}
	return image, nil
}

// releaseImage names the payload in errors: its pull spec, or the
// HostedControlPlane's release image when the payload does not carry one.
func (in Inputs) releaseImage() string {
	if in.Release.PullSpec != "" {
		return in.Release.PullSpec
	}
	return in.HostedControlPlane.Spec.ReleaseImage
}

// selector is a component's pod selector.
func selector(component string) map[string]string {
	return map[string]string{AppLabel: component}
}

// labels are the labels of a component's objects and pods.
func labels(component string) map[string]string {
	return map[string]string{AppLabel: component, ComponentLabel: component}
}

// objectMeta is the metadata of a component's objects: in the control
// plane's namespace, named after the component, labelled with it, and linked
// back to the HostedCluster when the HostedControlPlane is.
func (in Inputs) objectMeta(component string) metav1.ObjectMeta {
	hcp := in.HostedControlPlane
	meta := metav1.ObjectMeta{Namespace: hcp.Namespace, Name: component, Labels: labels(component)}
	if cluster, ok := hcp.Annotations[hyperv1.ClusterAnnotation]; ok {
		meta.Annotations = map[string]string{hyperv1.ClusterAnnotation: cluster}
	}
	return meta
}
