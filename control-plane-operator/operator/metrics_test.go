package operator_test

import (
	"testing"

	"github.com/spf13/pflag"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/control-plane-operator/operator"
	horender "github.com/hypershift-le/hypershift/hypershift-operator/render"
	"github.com/hypershift-le/hypershift/test/metricsscrape"
	"github.com/hypershift-le/hypershift/test/operatorprocess"
)

// TestMetricsNeedAuthorization: a control-plane-operator with
// --metrics-secure, running as its ServiceAccount with no more than the
// hypershift-operator grants it (the namespace's Role, and the
// system:auth-delegator ClusterRoleBinding rendered for its namespace),
// serves metrics over HTTPS to a scraper bound to the metrics-reader
// ClusterRole and refuses the others.
func TestMetricsNeedAuthorization(t *testing.T) {
	cp := newControlPlane(t, false)
	ns := cp.namespace
	in := horender.Inputs{HostedCluster: &hyperv1.HostedCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: "demo"}}}
	delegator := horender.ControlPlaneOperatorAuthDelegator(in)
	delegator.Name = horender.AuthDelegatorBindingName(ns)
	delegator.Subjects[0].Namespace = ns
	binding := horender.ControlPlaneOperatorRoleBinding(in)
	binding.Namespace = ns
	binding.Subjects[0].Namespace = ns
	for _, obj := range []client.Object{delegator, binding} {
		obj.SetResourceVersion("")
		if err := env.Client.Create(t.Context(), obj); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = env.Client.Delete(t.Context(), delegator) })

	metricsAddr := operatorprocess.FreeAddress(t)
	startCPO(t, cp, "cpo-a", cp.releaseImage, "--kubeconfig="+podKubeconfig(t, ns, "cpo-a"),
		"--metrics-bind-address="+metricsAddr, "--metrics-secure=true")
	metricsscrape.ExpectAuthorized(t, env.Client, ns, metricsAddr, "hypershift_leader_election_is_leader")
}

// TestMetricsAreSecureByDefault: the hypershift-operator renders no
// --metrics-secure into the CPO's Deployment, so the binary's default is
// what runs; the harness's CPOs serve plain HTTP only because it asks.
func TestMetricsAreSecureByDefault(t *testing.T) {
	o := operator.DefaultOptions()
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if opts := o.Metrics.ServerOptions(); !opts.SecureServing || opts.FilterProvider == nil {
		t.Fatalf("by default the metrics server is %+v, want HTTPS with authorization", opts)
	}
}
