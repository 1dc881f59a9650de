package apivalidation_test

import (
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
)

// TestNodePoolScales drives a NodePool's scale subresource, as kubectl
// scale np does: it reads and sets spec.replicas, and refuses a negative
// count with the schema's message.
func TestNodePoolScales(t *testing.T) {
	ns := env.Namespace(t)
	np := &hyperv1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "workers"},
		Spec: hyperv1.NodePoolSpec{
			ClusterName: "demo",
			Release:     hyperv1.Release{Image: "quay.io/openshift-release-dev/ocp-release:4.17.0-x86_64"},
			Replicas:    ptr.To(int32(2)),
			Platform:    hyperv1.NodePoolPlatform{Type: hyperv1.NonePlatform},
			Management:  hyperv1.NodePoolManagement{UpgradeType: hyperv1.UpgradeTypeReplace},
		},
	}
	if err := env.Client.Create(t.Context(), np); err != nil {
		t.Fatal(err)
	}
	scale := &autoscalingv1.Scale{}
	if err := env.Client.SubResource("scale").Get(t.Context(), np, scale); err != nil {
		t.Fatal(err)
	}
	if scale.Spec.Replicas != 2 {
		t.Fatalf("scale reads %d replicas, want 2", scale.Spec.Replicas)
	}
	scale.Spec.Replicas = 3
	if err := env.Client.SubResource("scale").Update(t.Context(), np, client.WithSubResourceBody(scale)); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(np), np); err != nil {
		t.Fatal(err)
	}
	if np.Spec.Replicas == nil || *np.Spec.Replicas != 3 {
		t.Fatalf("spec.replicas %v after scaling to 3", np.Spec.Replicas)
	}
	scale.Spec.Replicas = -1
	if err := env.Client.SubResource("scale").Update(t.Context(), np, client.WithSubResourceBody(scale)); err == nil {
		t.Fatal("scaling to -1 was accepted")
	}
}
