package hostedcontrolplane

import (
	"context"

	"github.com/hypershift-le/hypershift/control-plane-operator/render"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// isComponent passes events of the objects the CPO renders.
var isComponent = predicate.NewPredicateFuncs(func(obj client.Object) bool {
	_, ok := obj.GetLabels()[render.ComponentLabel]
	return ok
})

// hostedControlPlane maps a component to the one HostedControlPlane this
// operator was rendered for.
func (r *Reconciler) hostedControlPlane(_ context.Context, obj client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: r.Name}}}
}

// isOwnHostedControlPlane passes events of the HostedControlPlane this
// operator was rendered for, and of no other in its namespace.
func (r *Reconciler) isOwnHostedControlPlane() predicate.Predicate {
	return predicate.NewPredicateFuncs(func(obj client.Object) bool { return obj.GetName() == r.Name })
}
