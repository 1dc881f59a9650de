package fencing

import (
	"slices"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/hypershift-le/hypershift/hypershift-operator/rbac"
)

// TestOperatorMayPatchEveryPolicyItApplies: the operator's ClusterRole
// lets it patch only the policies named in rbac.FencingPolicyNames; a
// policy this controller applies under another name would be refused.
func TestOperatorMayPatchEveryPolicyItApplies(t *testing.T) {
	var applied []string
	for _, obj := range (&Reconciler{Namespace: "hypershift"}).Objects() {
		if _, ok := obj.(*admissionregistrationv1.ValidatingAdmissionPolicy); ok {
			applied = append(applied, obj.GetName())
		}
	}
	slices.Sort(applied)
	names := slices.Sorted(slices.Values(rbac.FencingPolicyNames))
	if !slices.Equal(applied, names) {
		t.Errorf("the controller applies policies %v, the ClusterRole lets it patch %v", applied, names)
	}
	if slices.Contains(names, rbac.ClusterRoleBindingPolicyName) {
		t.Errorf("the ClusterRole lets the operator patch %s, the policy that confines it", rbac.ClusterRoleBindingPolicyName)
	}
}
