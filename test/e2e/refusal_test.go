package e2e

import (
	"strings"
	"testing"
	"time"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/cmd/cluster"
)

// testRefused: a node port outside the management cluster's range passes
// every check the CLI can make (a server-side dry run checks a port's
// allocation, not its range), and the real control-plane-operator's
// Service is refused: create --wait ends at once with the API server's
// words, relayed by both operators. destroy removes what was created.
func testRefused(t *testing.T) {
	started := time.Now()
	out, err := tryExecute(t, cluster.NewCreateCommand(), createArgs(t, "refused", hyperv1.SingleReplica, "--external-api-server-port=80", "--wait", "--timeout=3m")...)
	want := `cannot become Available until its spec changes: ValidConfiguration=False (RefusedByAPIServer): Refused by the management cluster's API server: ` +
		`Service "kube-apiserver" is invalid: spec.ports[0].nodePort: Invalid value: 80: provided port is not in the valid range. The range of valid ports is 30000-32767`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("create --wait on node port 80: got %v, want an error containing %q\n%s", err, want, out)
	}
	t.Logf("create --wait gave up after %s: %v", time.Since(started).Round(time.Millisecond), err)
	execute(t, cluster.NewDestroyCommand(), "cluster", "--name=refused", "--namespace=clusters", "--wait", "--timeout=3m")
}
