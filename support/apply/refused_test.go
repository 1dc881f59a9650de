package apply_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hypershift-le/hypershift/support/apply"
)

func TestRefused(t *testing.T) {
	services := schema.GroupResource{Resource: "services"}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{name: "when the object is invalid, it is refused", err: apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, "kube-apiserver", nil), want: true},
		{name: "when a policy forbids it, it is refused", err: apierrors.NewForbidden(services, "kube-apiserver", fmt.Errorf("denied")), want: true},
		{name: "when the request is malformed, it is refused", err: apierrors.NewBadRequest("bad"), want: true},
		{name: "when it is wrapped, it is still refused", err: fmt.Errorf("failed to apply: %w", apierrors.NewForbidden(services, "x", fmt.Errorf("denied"))), want: true},
		{name: "when the API server fails, it is transient", err: apierrors.NewInternalError(fmt.Errorf("etcd")), want: false},
		{name: "when the request times out, it is transient", err: apierrors.NewTimeoutError("slow", 1), want: false},
		{name: "when it conflicts, it is transient", err: apierrors.NewConflict(services, "x", fmt.Errorf("changed")), want: false},
		{name: "when it is throttled, it is transient", err: apierrors.NewTooManyRequests("busy", 1), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := apply.Refused(tt.err); got != tt.want {
				t.Errorf("Refused(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

// TestRefusalOfAnAllocatedNodePort applies two Services asking for one
// node port to the real API server: the second is refused, and Refusal
// quotes the API server's words without the applier's wrapping.
func TestRefusalOfAnAllocatedNodePort(t *testing.T) {
	ns := env.Namespace(t)
	a := apply.Applier{Client: env.Client, FieldOwner: "refusal-test"}
	service := func(name string) *corev1.Service {
		return &corev1.Service{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Selector: map[string]string{"app": name}, Ports: []corev1.ServicePort{{
				Name: "https", Port: 6443, TargetPort: intstr.FromInt32(6443), NodePort: 30777,
			}}},
		}
	}
	if _, err := a.Apply(t.Context(), service("first")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.Delete(t.Context(), service("first"), client.PropagationPolicy(metav1.DeletePropagationBackground))
	})
	_, err := a.Apply(t.Context(), service("second"))
	if !apply.Refused(err) {
		t.Fatalf("the second Service on node port 30777: got %v, want a refusal", err)
	}
	want := `Refused by the management cluster's API server: Service "second" is invalid: spec.ports[0].nodePort: Invalid value: 30777: provided port is already allocated`
	if got := apply.Refusal(err); got != want {
		t.Errorf("Refusal =\n  %s\nwant\n  %s", got, want)
	}
}
