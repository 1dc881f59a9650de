// Package admission builds the parts of ValidatingAdmissionPolicies that
// the project's policies share.
package admission

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// MatchResources matches operations on resource of group, in every version
// and scope. It spells out the API server's defaults (matchConstraints is
// an atomic struct): another field manager applying the same manifest (a
// GitOps tool, kubectl apply --server-side) then sends the value the API
// server holds and meets no conflict.
func MatchResources(group, resource string, operations ...admissionregistrationv1.OperationType) *admissionregistrationv1.MatchResources {
	return &admissionregistrationv1.MatchResources{
		NamespaceSelector: &metav1.LabelSelector{},
		ObjectSelector:    &metav1.LabelSelector{},
		MatchPolicy:       ptr.To(admissionregistrationv1.Equivalent),
		ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
			RuleWithOperations: admissionregistrationv1.RuleWithOperations{
				Operations: operations,
				Rule: admissionregistrationv1.Rule{
					APIGroups:   []string{group},
					APIVersions: []string{"*"},
					Resources:   []string{resource},
					Scope:       ptr.To(admissionregistrationv1.AllScopes),
				},
			},
		}},
	}
}
