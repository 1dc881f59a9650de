package hostedcontrolplane

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/control-plane-operator/render"
)

// isComponent passes events of the objects the CPO renders.
var isComponent = predicate.NewPredicateFuncs(func(obj client.Object) bool {
	_, ok := obj.GetLabels()[render.ComponentLabel]
	return ok
})

// hostedControlPlanes maps a component to the HostedControlPlanes of its
// namespace (one per control-plane namespace).
func (r *Reconciler) hostedControlPlanes(ctx context.Context, obj client.Object) []reconcile.Request {
	list := &hyperv1.HostedControlPlaneList{}
	if err := r.Client.List(ctx, list, client.InNamespace(obj.GetNamespace())); err != nil {
		return nil
	}
	requests := make([]reconcile.Request, 0, len(list.Items))
	for _, hcp := range list.Items {
		requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&hcp)})
	}
	return requests
}
