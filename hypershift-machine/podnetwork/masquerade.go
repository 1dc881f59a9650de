package podnetwork

import (
	"fmt"
	"os/exec"
	"slices"
	"strings"
)

// Chain is the nat chain of the pod network's masquerade rules.
const Chain = "HYPERSHIFT-POD-NETWORK"

// masqueradeRules are the chain's rules, as iptables -S prints them: pod
// traffic within the cluster network keeps its addresses, pod traffic
// leaving it is masqueraded to the machine's address.
func masqueradeRules(clusterNetwork string) []string {
	return []string{
		"-N " + Chain,
		fmt.Sprintf("-A %s -s %s -d %s -j RETURN", Chain, clusterNetwork, clusterNetwork),
		fmt.Sprintf("-A %s -s %s ! -d 224.0.0.0/4 -j MASQUERADE --random-fully", Chain, clusterNetwork),
	}
}

// jumpRule sends every packet leaving the machine through the chain.
var jumpRule = []string{"POSTROUTING", "-m", "comment", "--comment", "hypershift pod network masquerade", "-j", Chain}

// EnsureMasquerade keeps the chain's rules and the jump to it; it changes
// nothing that is already so.
func EnsureMasquerade(plan Plan) error {
	want := masqueradeRules(plan.ClusterNetwork.String())
	current, err := iptables("-t", "nat", "-S", Chain)
	if err != nil {
		if _, err := iptables("-t", "nat", "-N", Chain); err != nil {
			return err
		}
		current = "-N " + Chain + "\n"
	}
	if !slices.Equal(strings.Split(strings.TrimSpace(current), "\n"), want) {
		if _, err := iptables("-t", "nat", "-F", Chain); err != nil {
			return err
		}
		for _, rule := range want[1:] {
			if _, err := iptables(append([]string{"-t", "nat"}, strings.Fields(rule)...)...); err != nil {
				return err
			}
		}
	}
	if _, err := iptables(append([]string{"-t", "nat", "-C"}, jumpRule...)...); err != nil {
		if _, err := iptables(append([]string{"-t", "nat", "-A"}, jumpRule...)...); err != nil {
			return err
		}
	}
	return nil
}

func iptables(args ...string) (string, error) {
	out, err := exec.Command("iptables", append([]string{"-w", "5"}, args...)...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("iptables %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}
