package components

import (
	"testing"
)

func TestAllComeAfterWhatTheyDependOn(t *testing.T) {
	seen := map[string]bool{}
	var names []string
	for _, c := range All() {
		for _, dep := range c.DependsOn() {
			if !seen[dep] {
				t.Errorf("%s comes before %s, which it depends on", c.Name(), dep)
			}
		}
		seen[c.Name()] = true
		names = append(names, c.Name())
	}
	if len(names) != 4 {
		t.Errorf("components = %v, want etcd, kube-apiserver, kube-controller-manager and kube-scheduler", names)
	}
}
