package hostedcluster

import (
	"context"
	"fmt"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/render"
	"github.com/hypershift-le/hypershift/support/apply"
)

// reconcileNetworkPolicies keeps the control-plane namespace's
// NetworkPolicies (render.NetworkPolicies) as the operator's Isolation and
// the published endpoint say; without management networks it deletes
// those a former configuration left (read from the cache: a pass that
// finds none writes nothing).
func (r *Reconciler) reconcileNetworkPolicies(ctx context.Context, s *scope, in render.Inputs, applier apply.Applier) error {
	var endpoint *hyperv1.APIEndpoint
	if len(r.Isolation.ManagementNetworks) > 0 {
		var err error
		if endpoint, err = r.publishedEndpoint(ctx, s); err != nil {
			return err
		}
	}
	policies := render.NetworkPolicies(in, r.Isolation, endpoint)
	for _, p := range policies {
		if _, err := applier.Apply(ctx, p); err != nil {
			return refusedOr(s, err)
		}
	}
	if len(policies) > 0 || s.namespaceCreated {
		return nil
	}
	for _, name := range []string{render.MachinesEgressPolicyName, render.KubeAPIServerEgressPolicyName} {
		p := &networkingv1.NetworkPolicy{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: name}, p); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return err
		}
		if err := r.Client.Delete(ctx, p, client.Preconditions{UID: &p.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("failed to delete NetworkPolicy %s/%s, which --management-cluster-networks no longer asks for: %w", p.Namespace, name, err)
		}
	}
	return nil
}

// publishedEndpoint is the endpoint the control-plane-operator published
// on the HostedControlPlane (from the cache), or the one the HostedCluster's
// status last reported while there is none. Not only the latter: the HO
// copies the endpoint into the status at the end of the pass that sees it
// published, and its own status writes start no pass, so a policy rendered
// from the status alone would wait for an unrelated change.
func (r *Reconciler) publishedEndpoint(ctx context.Context, s *scope) (*hyperv1.APIEndpoint, error) {
	hcp := &hyperv1.HostedControlPlane{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: s.hc.Name}, hcp)
	switch {
	case err == nil && hcp.Status.ControlPlaneEndpoint != nil:
		return hcp.Status.ControlPlaneEndpoint, nil
	case err != nil && !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("failed to get HostedControlPlane %s/%s: %w", s.namespace, s.hc.Name, err)
	}
	return s.original.Status.ControlPlaneEndpoint, nil
}
