package component

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
)

type fake struct {
	name string
	deps []string
}

func (f fake) Name() string                                           { return f.name }
func (f fake) DependsOn() []string                                    { return f.deps }
func (f fake) Services(*hyperv1.HostedControlPlane) []*corev1.Service { return nil }
func (f fake) Workload(Inputs) (*Workload, error)                     { return nil, nil }

func TestOrder(t *testing.T) {
	tests := []struct {
		name    string
		in      []Component
		want    string
		wantErr string
	}{
		{name: "when already in order, it keeps the order", in: []Component{fake{name: "a"}, fake{name: "b", deps: []string{"a"}}, fake{name: "c"}}, want: "a b c"},
		{name: "when a dependency comes later, it moves before its dependent", in: []Component{fake{name: "b", deps: []string{"a"}}, fake{name: "c"}, fake{name: "a"}}, want: "a b c"},
		{name: "when a dependency is unknown, it fails naming it", in: []Component{fake{name: "b", deps: []string{"x"}}}, wantErr: "b depends on x, which is not a component"},
		{name: "when components depend on each other, it fails", in: []Component{fake{name: "a", deps: []string{"b"}}, fake{name: "b", deps: []string{"a"}}}, wantErr: "cycle"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Order(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, c := range got {
				names = append(names, c.Name())
			}
			if strings.Join(names, " ") != tt.want {
				t.Errorf("order = %v, want %s", names, tt.want)
			}
		})
	}
}

func TestAvailable(t *testing.T) {
	deployment := func(generation, observed int64, updated, available int32) *appsv1.Deployment {
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Generation: generation},
			Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](3)},
			Status:     appsv1.DeploymentStatus{ObservedGeneration: observed, Replicas: max(updated, 3), UpdatedReplicas: updated, AvailableReplicas: available},
		}
	}
	surging := deployment(2, 2, 3, 3)
	surging.Status.Replicas = 4
	statefulSet := func(current, update string, updated, available int32) *appsv1.StatefulSet {
		return &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Generation: 2},
			Spec:       appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3)},
			Status: appsv1.StatefulSetStatus{ObservedGeneration: 2, CurrentRevision: current, UpdateRevision: update,
				UpdatedReplicas: updated, AvailableReplicas: available},
		}
	}
	tests := []struct {
		name       string
		live       client.Object
		want       bool
		wantReason string
	}{
		{name: "when the workload does not exist, it is not available", live: nil, wantReason: "WorkloadNotFound"},
		{name: "when the controller has not seen the latest spec, it is rolling out", live: deployment(2, 1, 3, 3), wantReason: "RollingOut"},
		{name: "when a replica runs an older spec, it is rolling out", live: deployment(2, 2, 2, 3), wantReason: "RollingOut"},
		{name: "when a replica is not available, it is not available", live: deployment(2, 2, 3, 2), wantReason: "ReplicasUnavailable"},
		{name: "when a replica of the older spec still runs beside the new ones, it is rolling out", live: surging, wantReason: "RollingOut"},
		{name: "when every replica runs the latest spec and is available, it is available", live: deployment(2, 2, 3, 3), want: true, wantReason: "AsExpected"},
		{name: "when a StatefulSet's revisions differ, it is rolling out", live: statefulSet("a", "b", 3, 3), wantReason: "RollingOut"},
		{name: "when a StatefulSet runs its update revision everywhere, it is available", live: statefulSet("b", "b", 3, 3), want: true, wantReason: "AsExpected"},
		{name: "when a StatefulSet lost a member, it is not available", live: statefulSet("b", "b", 3, 2), wantReason: "ReplicasUnavailable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Available(tt.live)
			if got.Available != tt.want || got.Reason != tt.wantReason || got.Message == "" {
				t.Errorf("Available = %+v, want available %v reason %s", got, tt.want, tt.wantReason)
			}
		})
	}
}
