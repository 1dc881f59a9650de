package kubescheduler

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/control-plane-operator/component/componenttest"
)

func TestGolden(t *testing.T) { componenttest.Golden(t, Component{}) }

func TestPodsArePodSecurityRestricted(t *testing.T) { componenttest.Restricted(t, Component{}) }

func TestElectsALeaderOnlyWithSeveralReplicas(t *testing.T) {
	for policy, want := range map[hyperv1.AvailabilityPolicy]string{
		hyperv1.SingleReplica:   "--leader-elect=false",
		hyperv1.HighlyAvailable: "--leader-elect=true",
	} {
		w, err := Component{}.Workload(componenttest.Inputs(policy))
		if err != nil {
			t.Fatal(err)
		}
		args := w.Object.(*appsv1.Deployment).Spec.Template.Spec.Containers[0].Args
		if !slices.Contains(args, want) || !slices.Contains(args, "--kubeconfig=/etc/kubernetes/kubeconfig/kubeconfig") {
			t.Errorf("%s: args %v", policy, args)
		}
	}
}
