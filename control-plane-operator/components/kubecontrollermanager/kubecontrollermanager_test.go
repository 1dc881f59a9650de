package kubecontrollermanager

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
	tests := []struct {
		policy       hyperv1.AvailabilityPolicy
		wantReplicas int32
		wantElect    string
		wantStrategy appsv1.DeploymentStrategyType
	}{
		{policy: hyperv1.SingleReplica, wantReplicas: 1, wantElect: "--leader-elect=false", wantStrategy: appsv1.RecreateDeploymentStrategyType},
		{policy: hyperv1.HighlyAvailable, wantReplicas: 2, wantElect: "--leader-elect=true", wantStrategy: appsv1.RollingUpdateDeploymentStrategyType},
	}
	for _, tt := range tests {
		t.Run(string(tt.policy), func(t *testing.T) {
			w, err := Component{}.Workload(componenttest.Inputs(tt.policy))
			if err != nil {
				t.Fatal(err)
			}
			d := w.Object.(*appsv1.Deployment)
			args := d.Spec.Template.Spec.Containers[0].Args
			if *d.Spec.Replicas != tt.wantReplicas || !slices.Contains(args, tt.wantElect) || d.Spec.Strategy.Type != tt.wantStrategy {
				t.Errorf("replicas %d, strategy %s, args %v", *d.Spec.Replicas, d.Spec.Strategy.Type, args)
			}
			if tt.wantReplicas > 1 && !slices.Contains(args, "--leader-elect-resource-namespace=kube-system") {
				t.Error("the Lease must be in the hosted cluster's kube-system")
			}
			for _, want := range []string{"--cluster-signing-key-file=/etc/kubernetes/certs/cluster-signer/ca.key", "--service-account-private-key-file=/etc/kubernetes/secrets/service-account/service-account.key"} {
				if !slices.Contains(args, want) {
					t.Errorf("args lack %s", want)
				}
			}
		})
	}
}
