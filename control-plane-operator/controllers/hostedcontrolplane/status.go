package hostedcontrolplane

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/control-plane-operator/render"
	"github.com/hypershift-le/hypershift/support/releaseinfo"
)

// ComponentAvailable is the condition type of one component's availability,
// e.g. KubeApiserverAvailable for kube-apiserver.
func ComponentAvailable(component string) string {
	var b strings.Builder
	for _, part := range strings.Split(component, "-") {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String() + "Available"
}

// setStatus sets one Available condition per component from its
// Deployment, the overall Available and ready, and the version once every
// component runs the release.
func (r *Reconciler) setStatus(ctx context.Context, hcp *hyperv1.HostedControlPlane, release *releaseinfo.ReleaseImage, components []render.Component) error {
	var waiting []string
	for _, component := range components {
		d := &appsv1.Deployment{}
		if err := r.Client.Get(ctx, client.ObjectKeyFromObject(component.Deployment), d); err != nil {
			if !apierrors.IsNotFound(err) {
				return fmt.Errorf("failed to get deployment %s: %w", component.Name, err)
			}
			d = nil
		}
		available, reason, message := deploymentAvailable(d, component.Deployment)
		setCondition(hcp, ComponentAvailable(component.Name), available, reason, message)
		if !available {
			waiting = append(waiting, component.Name)
		}
	}
	hcp.Status.ObservedGeneration = hcp.Generation
	if len(waiting) > 0 {
		hcp.Status.Ready = false
		setCondition(hcp, hyperv1.Available, false, "ComponentsUnavailable", "Waiting for "+strings.Join(waiting, ", "))
		return nil
	}
	hcp.Status.Ready = true
	hcp.Status.Version = release.Version
	hcp.Status.ReleaseImage = hcp.Spec.ReleaseImage
	setCondition(hcp, hyperv1.Available, true, "AsExpected", "All components are available")
	return nil
}

// deploymentAvailable says whether a Deployment runs the rendered template
// with every replica updated and available.
func deploymentAvailable(live, desired *appsv1.Deployment) (bool, string, string) {
	switch {
	case live == nil:
		return false, "DeploymentNotFound", "The deployment does not exist yet"
	case live.Status.ObservedGeneration < live.Generation:
		return false, "RollingOut", "The deployment controller has not observed the latest spec yet"
	case live.Status.UpdatedReplicas < *desired.Spec.Replicas:
		return false, "RollingOut", "Not every replica runs the latest spec yet"
	case live.Status.AvailableReplicas < *desired.Spec.Replicas:
		return false, "ReplicasUnavailable", "Not every replica is available yet"
	}
	return true, "AsExpected", "Every replica is available"
}

func setCondition(hcp *hyperv1.HostedControlPlane, conditionType string, ok bool, reason, message string) {
	status := metav1.ConditionFalse
	if ok {
		status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&hcp.Status.Conditions, metav1.Condition{
		Type:               conditionType,
		Status:             status,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: hcp.Generation,
	})
}
