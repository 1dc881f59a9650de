package testenv

import (
	"fmt"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Refusal describes what an admission policy refuses, for tests of what
// users see when the management cluster refuses an object: creating or
// updating the object Name of Group/Resource, in Namespace (empty: anywhere,
// and cluster-scoped objects), with Message.
type Refusal struct {
	Group, Resource, Name, Namespace, Message string
}

// Refuse binds a ValidatingAdmissionPolicy that refuses what r describes,
// waits until it is in force (a server-side dry run of probe, an object r
// refuses, is refused), and returns the name of the policy and of its
// binding. Both are deleted when the test ends.
func (e *Env) Refuse(t testing.TB, r Refusal, probe client.Object) string {
	t.Helper()
	name := "refuse-" + r.Resource + "-" + r.Name
	if r.Namespace != "" {
		name += "-" + r.Namespace
	}
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{r.Group}, APIVersions: []string{"*"}, Resources: []string{r.Resource}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: fmt.Sprintf("object.metadata.name != %q", r.Name), Message: r.Message}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	if r.Namespace != "" {
		binding.Spec.MatchResources = &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
			MatchLabels: map[string]string{"kubernetes.io/metadata.name": r.Namespace},
		}}
	}
	for _, obj := range []client.Object{policy, binding} {
		if err := e.Client.Create(t.Context(), obj); err != nil {
			t.Fatalf("failed to create %T %s: %v", obj, name, err)
		}
		t.Cleanup(func() { _ = e.Client.Delete(t.Context(), obj) })
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := e.Client.Create(t.Context(), probe.DeepCopyObject().(client.Object), client.DryRunAll)
		// A policy's refusal is 422 Invalid unless its validation names
		// another reason.
		if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
			return name
		}
		if time.Now().After(deadline) {
			t.Fatalf("policy %s is not in force after 30s: a dry run of the probe got %v", name, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
