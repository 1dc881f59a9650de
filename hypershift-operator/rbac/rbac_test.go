package rbac

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/component-helpers/auth/rbac/validation"

	"github.com/hypershift-le/hypershift/support/controlplanekinds"
)

// TestControlPlaneOperatorRulesGrantEveryKind: the CPO Role grants each
// kind of controlplanekinds.All its verbs, and delete on none that its
// teardown leaves alone.
func TestControlPlaneOperatorRulesGrantEveryKind(t *testing.T) {
	for _, kind := range controlplanekinds.All {
		want := []rbacv1.PolicyRule{{APIGroups: []string{kind.GVK.Group}, Resources: []string{kind.Resource}, Verbs: kind.Verbs()}}
		if covers, missing := validation.Covers(ControlPlaneOperatorRules(), want); !covers {
			t.Errorf("the control-plane-operator may not %v", missing)
		}
		del := []rbacv1.PolicyRule{{APIGroups: []string{kind.GVK.Group}, Resources: []string{kind.Resource}, Verbs: []string{"delete"}}}
		if covers, _ := validation.Covers(ControlPlaneOperatorRules(), del); covers != kind.Deleted {
			t.Errorf("the control-plane-operator may delete %s: %v, its teardown deletes them: %v", kind.Resource, covers, kind.Deleted)
		}
	}
}

func TestHypershiftOperatorRulesCoverTheRolesItGrants(t *testing.T) {
	for name, rules := range map[string][]rbacv1.PolicyRule{
		"the control-plane-operator's":                 ControlPlaneOperatorRules(),
		"the control-plane-operator's of platform Pod": PodPlatformControlPlaneOperatorRules(),
		"the cluster-api manager's":                    ClusterAPIRules(),
	} {
		if covers, missing := validation.Covers(HypershiftOperatorRules(), rules); !covers {
			t.Errorf("the HO cannot grant %s rules, which it does not hold: %v", name, missing)
		}
	}
}

// TestOnlyPlatformPodRunsMachines: a control-plane-operator of platform
// None may not make Pods; one of platform Pod may.
func TestOnlyPlatformPodRunsMachines(t *testing.T) {
	pods := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create"}}}
	if covers, _ := validation.Covers(ControlPlaneOperatorRules(), pods); covers {
		t.Error("a control-plane-operator of platform None may create Pods")
	}
	if covers, _ := validation.Covers(PodPlatformControlPlaneOperatorRules(), pods); !covers {
		t.Error("a control-plane-operator of platform Pod may not create its machines' Pods")
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

func TestLeaseRulesAreLeastPrivilege(t *testing.T) {
	for lease, rules := range map[string][]rbacv1.PolicyRule{
		"control-plane-operator-leader-elect": PodPlatformControlPlaneOperatorRules(),
		"controller-leader-election-capi":     ClusterAPIRules(),
	} {
		for _, rule := range rules {
			if rule.Resources[0] != "leases" {
				continue
			}
			for _, verb := range rule.Verbs {
				if verb == "create" {
					continue
				}
				if len(rule.ResourceNames) != 1 || rule.ResourceNames[0] != lease {
					t.Errorf("lease verb %q is not limited to Lease %s: %+v", verb, lease, rule)
				}
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
