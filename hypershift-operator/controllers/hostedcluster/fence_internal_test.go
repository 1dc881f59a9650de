package hostedcluster

import (
	"testing"
	"time"
)

func TestNotInForceRecheck(t *testing.T) {
	for n, want := range map[int]time.Duration{
		1:  2 * time.Second,
		2:  4 * time.Second,
		3:  8 * time.Second,
		4:  10 * time.Second,
		50: 10 * time.Second,
	} {
		if got := notInForceRecheck(n); got != want {
			t.Errorf("after %d probes in a row found the binding not in force, the next waits %s, want %s", n, got, want)
		}
	}
}

// TestRefusingBinding reads the binding out of a refusal as the API server
// words it (k8s.io/apiserver's validating policy dispatcher).
func TestRefusingBinding(t *testing.T) {
	for message, want := range map[string]string{
		`admission webhook denied: ValidatingAdmissionPolicy 'control-plane-operator-fencing.hypershift.openshift.io' with binding 'control-plane-operator-fencing.hypershift.openshift.io' denied request: fenced: control-plane-operator pod x does not hold Lease ns/l (holder: y); only the holder may write`: "control-plane-operator-fencing.hypershift.openshift.io",
		`ValidatingAdmissionPolicy 'p' with binding 'control-plane-operator-fencing.clusters-demo' denied request: fenced`: "control-plane-operator-fencing.clusters-demo",
		`ValidatingAdmissionPolicy 'p' denied request: fenced`:                                                             "",
		`with binding 'unterminated`: "",
	} {
		if got := refusingBinding(message); got != want {
			t.Errorf("refusingBinding(%q) = %q, want %q", message, got, want)
		}
	}
}
