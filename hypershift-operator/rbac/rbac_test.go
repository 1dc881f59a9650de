package rbac

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/component-helpers/auth/rbac/validation"
)

func TestHypershiftOperatorRulesCoverControlPlaneOperatorRules(t *testing.T) {
	covers, missing := validation.Covers(HypershiftOperatorRules(), ControlPlaneOperatorRules())
	if !covers {
		t.Fatalf("the HO cannot grant rules it does not hold: %v", missing)
	}
}

func TestCoverageCheckCanFail(t *testing.T) {
	withoutLeases := []rbacv1.PolicyRule{}
	for _, rule := range HypershiftOperatorRules() {
		if rule.Resources[0] != "leases" {
			withoutLeases = append(withoutLeases, rule)
		}
	}
	if covers, _ := validation.Covers(withoutLeases, ControlPlaneOperatorRules()); covers {
		t.Fatal("when the HO's rules lack leases, they must not cover the CPO Role")
	}
}

func TestControlPlaneOperatorLeaseRulesAreLeastPrivilege(t *testing.T) {
	for _, rule := range ControlPlaneOperatorRules() {
		if rule.Resources[0] != "leases" {
			continue
		}
		for _, verb := range rule.Verbs {
			if verb == "create" {
				continue
			}
			if len(rule.ResourceNames) != 1 || rule.ResourceNames[0] != "control-plane-operator-leader-elect" {
				t.Errorf("lease verb %q is not limited to the CPO Lease: %+v", verb, rule)
			}
		}
	}
}

// TestOperatorCannotChangeItsClusterRoleBindingPolicy: admission policies
// never judge admission policies, so only the ClusterRole keeps the
// operator from editing or deleting the policy that confines it.
func TestOperatorCannotChangeItsClusterRoleBindingPolicy(t *testing.T) {
	for _, verb := range []string{"update", "patch", "delete", "deletecollection"} {
		rule := rbacv1.PolicyRule{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"validatingadmissionpolicies"}, Verbs: []string{verb}, ResourceNames: []string{ClusterRoleBindingPolicyName}}
		if covers, _ := validation.Covers(HypershiftOperatorRules(), []rbacv1.PolicyRule{rule}); covers {
			t.Errorf("the operator may %s ValidatingAdmissionPolicy %s", verb, ClusterRoleBindingPolicyName)
		}
	}
	// The check can fail: the fencing policy it does patch.
	rule := rbacv1.PolicyRule{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"validatingadmissionpolicies"}, Verbs: []string{"patch"}, ResourceNames: FencingPolicyNames[:1]}
	if covers, _ := validation.Covers(HypershiftOperatorRules(), []rbacv1.PolicyRule{rule}); !covers {
		t.Errorf("the operator may not patch %s, which it applies", FencingPolicyNames[0])
	}
}
