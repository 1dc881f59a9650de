package testenv

import (
	"slices"
	"testing"
)

// TestWithFlags replaces a flag of the same name, list flags included
// (given twice, kube-controller-manager would add the second list to the
// first), keeps the others in order and adds the new ones, sorted.
func TestWithFlags(t *testing.T) {
	args := []string{"--controllers=a,b", "--leader-elect=false", "--use-service-account-credentials=false", "--controllers-extra=x"}
	got := withFlags(args, map[string]string{"use-service-account-credentials": "true", "controllers": "*", "concurrent-gc-syncs": "20"})
	want := []string{"--leader-elect=false", "--controllers-extra=x", "--concurrent-gc-syncs=20", "--controllers=*", "--use-service-account-credentials=true"}
	if !slices.Equal(got, want) {
		t.Errorf("withFlags = %q, want %q", got, want)
	}
	if got := withFlags(args, nil); !slices.Equal(got, args) {
		t.Errorf("withFlags without flags = %q, want %q", got, args)
	}
	if args[0] != "--controllers=a,b" {
		t.Errorf("withFlags changed its argument: %q", args)
	}
}
