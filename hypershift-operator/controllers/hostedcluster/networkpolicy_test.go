package hostedcluster_test

import (
	"fmt"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/controllers/hostedcluster"
	"github.com/hypershift-le/hypershift/hypershift-operator/render"
	"github.com/hypershift-le/hypershift/support/testutil"
)

// TestNetworkPolicies: with management networks, the HO gives the
// control-plane namespace its two NetworkPolicies, with its own
// ClusterRole's rights alone, before the control plane publishes an
// endpoint and then with a rule for the endpoint it published; an
// operator without them deletes both.
func TestNetworkPolicies(t *testing.T) {
	iso, err := render.ParseIsolation([]string{"198.18.0.1/32"}, []string{"198.18.0.1:5000"})
	if err != nil {
		t.Fatal(err)
	}
	_, stop := startStoppableOperator(t, func(r *hostedcluster.Reconciler) { r.Isolation = iso })
	c := newCluster(t, "4.17.0", nil)
	ns := c.controlPlaneNamespace()
	get := func(name string) (*networkingv1.NetworkPolicy, error) {
		p := &networkingv1.NetworkPolicy{}
		return p, env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, p)
	}
	endpointRule := func(p *networkingv1.NetworkPolicy) bool {
		for _, r := range p.Spec.Egress {
			for _, to := range r.To {
				if to.IPBlock != nil && to.IPBlock.CIDR == "198.18.0.11/32" && len(r.Ports) == 1 && r.Ports[0].Port.IntVal == 31234 {
					return true
				}
			}
		}
		return false
	}
	testutil.Eventually(t, converge, func() error {
		for _, name := range []string{render.MachinesEgressPolicyName, render.KubeAPIServerEgressPolicyName} {
			if _, err := get(name); err != nil {
				return fmt.Errorf("NetworkPolicy %s: %w", name, err)
			}
		}
		return nil
	})
	if p, _ := get(render.MachinesEgressPolicyName); endpointRule(p) {
		t.Fatal("the machines' policy allows an endpoint before one was published")
	}

	// The control plane publishes its endpoint.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		hcp := &hyperv1.HostedControlPlane{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: c.hc.Name}, hcp); err != nil {
			return err
		}
		hcp.Status.ControlPlaneEndpoint = &hyperv1.APIEndpoint{Host: "198.18.0.11", Port: 31234}
		return env.Client.Status().Update(t.Context(), hcp)
	}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, converge, func() error {
		p, err := get(render.MachinesEgressPolicyName)
		if err != nil {
			return err
		}
		if !endpointRule(p) {
			return fmt.Errorf("the machines' policy does not allow the published endpoint 198.18.0.11:31234: %+v", p.Spec.Egress)
		}
		return nil
	})

	// An operator without management networks removes them.
	stop()
	startOperator(t, nil)
	touches := 0
	testutil.Eventually(t, converge, func() error {
		touches++
		c.touch(t, touches)
		for _, name := range []string{render.MachinesEgressPolicyName, render.KubeAPIServerEgressPolicyName} {
			if _, err := get(name); !apierrors.IsNotFound(err) {
				return fmt.Errorf("NetworkPolicy %s is still there (%w)", name, err)
			}
		}
		return nil
	})
}
