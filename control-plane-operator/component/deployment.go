package component

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
)

// Deployment is the workload of a component that runs as a Deployment:
// replicas pods of pod, labelled and selected by name, rolled by strategy,
// their template carrying the digest of the Secrets they read (so that a
// re-issued certificate rolls them), spread over nodes (Spread), and with
// several replicas a DisruptionBudget letting one go at a time.
func (in Inputs) Deployment(name string, replicas int32, strategy appsv1.DeploymentStrategy, pod corev1.PodSpec, secrets ...string) *Workload {
	pod.TopologySpreadConstraints = Spread(name, replicas)
	w := &Workload{}
	if replicas > 1 {
		w.Extras = append(w.Extras, DisruptionBudget(in.HostedControlPlane, name, 1))
	}
	w.Object = &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: appsv1.SchemeGroupVersion.String(), Kind: "Deployment"},
		ObjectMeta: ObjectMeta(in.HostedControlPlane, name, name),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: Selector(name)},
			Strategy: strategy,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: in.PodTemplateMeta(name, secrets...),
				Spec:       pod,
			},
		},
	}
	return w
}

// NoServices is embedded by the components that serve nothing to the
// others: it implements Component.Services.
type NoServices struct{}

// Services implements Component: none.
func (NoServices) Services(*hyperv1.HostedControlPlane) []*corev1.Service { return nil }
