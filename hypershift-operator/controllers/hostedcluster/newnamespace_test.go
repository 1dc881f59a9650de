package hostedcluster_test

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/testutil"
)

// TestANewNamespaceIsNotReadForSecrets: the pass that creates a
// HostedCluster's control-plane namespace knows that nothing is in it but
// what it writes, so it reads no Secret of it from the API server (not the
// pull secret's copy before applying it, not the encryption key copies to
// delete), from the API server's audit log: every request of that pass
// comes before its first write of the control-plane-operator Deployment.
func TestANewNamespaceIsNotReadForSecrets(t *testing.T) {
	ho := startOperator(t, nil)
	since := time.Now()
	c := newCluster(t, "4.17.0", nil)
	ns := c.controlPlaneNamespace()
	testutil.Eventually(t, converge, func() error {
		return env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: hyperv1.ControlPlaneOperatorName}, &appsv1.Deployment{})
	})
	var deployed time.Time
	var reads []auditv1.Event
	testutil.Eventually(t, converge, func() error {
		events, err := env.AuditEvents()
		if err != nil {
			return err
		}
		deployed, reads = time.Time{}, nil
		for _, e := range events {
			at := e.RequestReceivedTimestamp.Time
			if e.User.Username != ho || at.Before(since) || e.ObjectRef == nil || e.ObjectRef.Namespace != ns {
				continue
			}
			switch {
			case e.ObjectRef.Resource == "deployments" && e.ObjectRef.Name == hyperv1.ControlPlaneOperatorName && deployed.IsZero() && e.Verb == "patch":
				deployed = at
			case e.ObjectRef.Resource == "secrets" && (e.Verb == "get" || e.Verb == "list"):
				reads = append(reads, e)
			}
		}
		if deployed.IsZero() {
			return fmt.Errorf("no write of Deployment %s/%s by %s in the audit log yet", ns, hyperv1.ControlPlaneOperatorName, ho)
		}
		return nil
	})
	var first []auditv1.Event
	for _, e := range reads {
		if e.RequestReceivedTimestamp.Time.Before(deployed) {
			first = append(first, e)
		}
	}
	if len(first) > 0 {
		t.Fatalf("the pass that created namespace %s read %d of its Secrets from the API server:%s", ns, len(first), describe(first))
	}
}
