package operator

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/hypershift-le/hypershift/hypershift-operator/controllers/hostedcluster"
)

// DetectFencing asks the API server whether it can fence: it must serve
// ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1) and put the
// pod's name into pod-bound tokens (Kubernetes 1.30 and later).
func DetectFencing(cfg *rest.Config, enabled bool) (hostedcluster.Fencing, error) {
	f := hostedcluster.Fencing{Enabled: enabled}
	if !enabled {
		return f, nil
	}
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = 10 * time.Second // a hung API server is asked again, not waited for
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return f, fmt.Errorf("failed to create a discovery client: %w", err)
	}
	version, err := dc.ServerVersion()
	if err != nil {
		return f, fmt.Errorf("failed to read the API server's version: %w", err)
	}
	if major, minor := atoi(version.Major), atoi(version.Minor); major < 1 || (major == 1 && minor < 30) {
		f.Unavailable = fmt.Sprintf("The API server is Kubernetes %s.%s: fencing needs 1.30 or later, whose pod-bound ServiceAccount tokens carry the pod's name", version.Major, version.Minor)
		return f, nil
	}
	resources, err := dc.ServerResourcesForGroupVersion("admissionregistration.k8s.io/v1")
	if err != nil {
		f.Unavailable = "The API server does not serve admissionregistration.k8s.io/v1: fencing needs ValidatingAdmissionPolicy"
		return f, nil //nolint:nilerr // a missing API is a condition, not a failure
	}
	for _, r := range resources.APIResources {
		if r.Name == "validatingadmissionpolicies" {
			return f, nil
		}
	}
	f.Unavailable = "The API server does not serve ValidatingAdmissionPolicy in admissionregistration.k8s.io/v1: fencing needs it"
	return f, nil
}

// atoi reads a version number such as "30" or "30+".
func atoi(s string) int {
	n, _ := strconv.Atoi(strings.TrimRight(s, "+"))
	return n
}
