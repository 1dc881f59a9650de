package hostedcontrolplane

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/controlplanekinds"
)

// isComponent passes events of the objects the CPO renders.
var isComponent = predicate.NewPredicateFuncs(func(obj client.Object) bool {
	return componentSelector.Matches(labels.Set(obj.GetLabels()))
})

// CacheOptions are the cache settings the controller needs in namespace:
// of the HostedControlPlanes only the one named name, and only Secrets it
// renders are cached (and watched); others, the pull secret among them, are
// read past the cache.
func CacheOptions(namespace, name string) cache.Options {
	return cache.Options{
		DefaultNamespaces: map[string]cache.Config{namespace: {}},
		ByObject: map[client.Object]cache.ByObject{
			&hyperv1.HostedControlPlane{}: {Field: fields.OneTermEqualSelector("metadata.name", name)},
			&corev1.Secret{}:              {Label: componentSelector},
		},
	}
}

// WarmCache has c run the informers of every kind the controller watches
// from the process's start, on a standby too, before any term sets the
// controller up: a replica that comes to lead finds them synced, or
// syncing since it started, and its first pass does not wait for a list of
// each kind after the Lease. It only reads. c must not have started.
func WarmCache(ctx context.Context, c cache.Cache) error {
	objs := []client.Object{&hyperv1.HostedControlPlane{}}
	for _, kind := range controlplanekinds.All {
		objs = append(objs, kind.New())
	}
	for _, obj := range objs {
		if _, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false)); err != nil {
			return fmt.Errorf("failed to start the cache of %T: %w", obj, err)
		}
	}
	return nil
}

// SetupWithManager registers the controller, which watches the component
// objects of every kind of controlplanekinds.All. Controllers are
// leader-only runnables: a standby starts none of them.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	byHostedControlPlane := handler.EnqueueRequestsFromMapFunc(r.hostedControlPlane)
	b := ctrl.NewControllerManagedBy(mgr).
		Named("hostedcontrolplane").
		For(&hyperv1.HostedControlPlane{}, builder.WithPredicates(r.isOwnHostedControlPlane()))
	for _, kind := range controlplanekinds.All {
		b = b.Watches(kind.New(), byHostedControlPlane, builder.WithPredicates(isComponent))
	}
	return b.Complete(r)
}

// hostedControlPlane maps a component object to the one HostedControlPlane
// this operator was rendered for.
func (r *Reconciler) hostedControlPlane(_ context.Context, obj client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: r.Name}}}
}

// isOwnHostedControlPlane passes events of the HostedControlPlane this
// operator was rendered for, and of no other in its namespace.
func (r *Reconciler) isOwnHostedControlPlane() predicate.Predicate {
	return predicate.NewPredicateFuncs(func(obj client.Object) bool { return obj.GetName() == r.Name })
}
