package networkpolicy

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func pod(namespace, name, node, ip string, labels map[string]string, ports ...corev1.ContainerPort) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Ports: ports}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, PodIPs: []corev1.PodIP{{IP: ip}}},
	}
}

func TestRules(t *testing.T) {
	c := Cluster{
		Namespaces: []corev1.Namespace{
			{ObjectMeta: metav1.ObjectMeta{Name: "cp", Labels: map[string]string{corev1.LabelMetadataName: "cp"}}},
			{ObjectMeta: metav1.ObjectMeta{Name: "kube-system", Labels: map[string]string{corev1.LabelMetadataName: "kube-system"}}},
		},
		Pods: []corev1.Pod{
			pod("cp", "machine-0", "node-a", "10.0.0.2", map[string]string{"machine": "0"}),
			pod("cp", "machine-1", "node-b", "10.0.1.2", map[string]string{"machine": "1"}),
			pod("cp", "etcd-0", "node-a", "10.0.0.3", map[string]string{"app": "etcd"}),
			pod("kube-system", "dns", "node-b", "10.0.1.3", map[string]string{"k8s-app": "kube-dns"},
				corev1.ContainerPort{Name: "dns", ContainerPort: 1053, Protocol: corev1.ProtocolUDP}),
			{ // of the host's network: neither selected nor selectable
				ObjectMeta: metav1.ObjectMeta{Namespace: "cp", Name: "host", Labels: map[string]string{"machine": "h"}},
				Spec:       corev1.PodSpec{NodeName: "node-a", HostNetwork: true},
				Status:     corev1.PodStatus{Phase: corev1.PodRunning, PodIPs: []corev1.PodIP{{IP: "192.0.2.1"}}},
			},
		},
		Policies: []networkingv1.NetworkPolicy{
			{
				ObjectMeta: metav1.ObjectMeta{Namespace: "cp", Name: "machines"},
				Spec: networkingv1.NetworkPolicySpec{
					PodSelector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "machine", Operator: metav1.LabelSelectorOpExists}}},
					PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
					Egress: []networkingv1.NetworkPolicyEgressRule{
						{To: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "machine", Operator: metav1.LabelSelectorOpExists}}}}}},
						{To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0", Except: []string{"10.0.0.0/8"}}}}},
						{To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.9.9.9/32"}}}, Ports: []networkingv1.NetworkPolicyPort{
							{Port: ptr.To(intstr.FromInt32(5000))},
							{Port: ptr.To(intstr.FromString("dns")), Protocol: ptr.To(corev1.ProtocolUDP)}, // no name toward an address
						}},
						{To: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: "kube-system"}}}},
							Ports: []networkingv1.NetworkPolicyPort{{Port: ptr.To(intstr.FromString("dns")), Protocol: ptr.To(corev1.ProtocolUDP)}}},
					},
				},
			},
			{ // ingress only: not enforced
				ObjectMeta: metav1.ObjectMeta{Namespace: "cp", Name: "ingress"},
				Spec:       networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}},
			},
		},
	}
	rules, err := Rules(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(rules) != 2 {
		t.Fatalf("rules for %d nodes, want node-a and node-b (the machines'): %v", len(rules), rules)
	}
	a := rules["node-a"]
	m0 := chainName("cp/machine-0")
	if want := []string{"-m conntrack --ctstate ESTABLISHED,RELATED -j RETURN", "-s 10.0.0.2/32 -j " + m0}; !slices.Equal(a.Chains[Chain], want) {
		t.Errorf("node-a's %s: %q, want %q (etcd-0 and the host-network pod are not selected)", Chain, a.Chains[Chain], want)
	}
	except := chainName("cp/machines/1/0")
	want := []string{
		"-d 10.0.0.2/32 -j ACCEPT", "-d 10.0.1.2/32 -j ACCEPT", // the machines, not the host-network pod
		"-j " + except,
		"-d 10.9.9.9/32 -p tcp -m tcp --dport 5000 -j ACCEPT",
		"-d 10.0.1.3/32 -p udp -m udp --dport 1053 -j ACCEPT", // the named port, resolved on the pod
	}
	got := a.Chains[m0]
	if len(got) != len(want)+2 || !slices.Equal(got[:len(want)], want) || !strings.Contains(got[len(want)], "tcp-reset") || !strings.Contains(got[len(want)+1], "icmp-port-unreachable") {
		t.Errorf("machine-0's chain:\n%s\nwant:\n%s\nthen the two REJECTs", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if want := []string{"-d 10.0.0.0/8 -j RETURN", "-d 0.0.0.0/0 -j ACCEPT"}; !slices.Equal(a.Chains[except], want) {
		t.Errorf("the except chain: %q, want %q", a.Chains[except], want)
	}

	// The restore flushes what it keeps, and removes the chains of a
	// machine gone.
	stale := chainName("cp/machine-9")
	in := Restore(a, []string{Chain, m0, stale})
	for _, line := range []string{"*filter", ":" + Chain + " - [0:0]", ":" + m0 + " - [0:0]", ":" + stale + " - [0:0]", "-X " + stale, "COMMIT"} {
		if !strings.Contains(in, line+"\n") {
			t.Errorf("restore input lacks %q:\n%s", line, in)
		}
	}
	if strings.Contains(in, "-X "+m0) || strings.Index(in, "-X "+stale) < strings.Index(in, "-A "+Chain) {
		t.Errorf("restore input removes a kept chain, or removes before the jumps are gone:\n%s", in)
	}
	// A node with nothing selected keeps only the replies' rule.
	if in := Restore(NodeRules{}, []string{Chain, m0}); !strings.Contains(in, "-X "+m0) || !strings.Contains(in, "-A "+Chain+" -m conntrack") {
		t.Errorf("restore input of an emptied node:\n%s", in)
	}
}
