package hostedcluster

import (
	"context"
	"fmt"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hypershift-le/hypershift/hypershift-operator/render"
	"github.com/hypershift-le/hypershift/support/apply"
)

// reconcileNetworkPolicies keeps the control-plane namespace's
// NetworkPolicies (render.NetworkPolicies) as the operator's Isolation and
// the published endpoint say; without management networks it deletes
// those a former configuration left (read from the cache: a pass that
// finds none writes nothing).
func (r *Reconciler) reconcileNetworkPolicies(ctx context.Context, s *scope, in render.Inputs, applier apply.Applier) error {
	policies := render.NetworkPolicies(in, r.Isolation, s.original.Status.ControlPlaneEndpoint)
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
