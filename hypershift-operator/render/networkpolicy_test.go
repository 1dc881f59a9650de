package render

import (
	"slices"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	infrav1 "github.com/hypershift-le/hypershift/api/infrastructure/v1beta1"
)

func TestNetworkPolicies(t *testing.T) {
	in := testInputs(hyperv1.SingleReplica)
	if got := NetworkPolicies(in, Isolation{}, nil); got != nil {
		t.Fatalf("without management networks: %d policies, want none", len(got))
	}
	iso, err := ParseIsolation([]string{"198.18.0.1/32", "198.19.0.0/24"}, []string{"198.18.0.1:5000"})
	if err != nil {
		t.Fatal(err)
	}
	cidrs := func(rules []networkingv1.NetworkPolicyEgressRule) (to []string, except [][]string) {
		for _, r := range rules {
			for _, p := range r.To {
				if p.IPBlock != nil {
					to = append(to, p.IPBlock.CIDR)
					except = append(except, p.IPBlock.Except)
				}
			}
		}
		return to, except
	}
	policies := NetworkPolicies(in, iso, &hyperv1.APIEndpoint{Host: "198.18.0.11", Port: 31000})
	if len(policies) != 2 || policies[0].Name != MachinesEgressPolicyName || policies[1].Name != KubeAPIServerEgressPolicyName {
		t.Fatalf("policies: %v", policies)
	}
	machines, kas := policies[0], policies[1]
	for _, p := range policies {
		if p.Namespace != in.Namespace() || p.Labels[NetworkPolicyLabel] != "true" || !slices.Equal(p.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}) {
			t.Errorf("%s: namespace %s, labels %v, types %v", p.Name, p.Namespace, p.Labels, p.Spec.PolicyTypes)
		}
	}
	if e := machines.Spec.PodSelector.MatchExpressions; len(e) != 1 || e[0].Key != infrav1.MachinePodLabel {
		t.Errorf("the machines' policy selects %v", machines.Spec.PodSelector)
	}
	to, except := cidrs(machines.Spec.Egress)
	if want := []string{"198.18.0.11/32", "198.18.0.1/32", "0.0.0.0/0"}; !slices.Equal(to, want) {
		t.Errorf("the machines' address rules: %v, want the endpoint, the registry, then everything but the management networks %v", to, want)
	}
	if want := []string{"198.18.0.1/32", "198.19.0.0/24"}; !slices.Equal(except[2], want) {
		t.Errorf("the machines' excepts: %v, want %v", except[2], want)
	}
	if p := machines.Spec.Egress[2].Ports; len(p) != 1 || p[0].Port.IntVal != 31000 {
		t.Errorf("the endpoint rule's ports: %v, want 31000 only", p)
	}
	if to, _ := cidrs(kas.Spec.Egress); !slices.Equal(to, []string{"0.0.0.0/0"}) {
		t.Errorf("the kube-apiserver's address rules: %v, want only everything but the management networks", to)
	}
	// An endpoint by name adds no rule.
	named := NetworkPolicies(in, iso, &hyperv1.APIEndpoint{Host: "api.example.com", Port: 443})
	if to, _ := cidrs(named[0].Spec.Egress); slices.Contains(to, "198.18.0.11/32") || len(to) != 2 {
		t.Errorf("with an endpoint by name, the machines' address rules: %v", to)
	}
}
