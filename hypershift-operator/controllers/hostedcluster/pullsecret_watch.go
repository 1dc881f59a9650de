package hostedcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
)

// pullSecretIndex indexes HostedClusters by the Secrets their spec names,
// <namespace>/<name>: the pull secret and the secret encryption keys.
const pullSecretIndex = "pullSecret"

// secretMetadata is the metadata of a Secret, as the pull-secret cache
// holds it.
func secretMetadata() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	return m
}

// pullSecretSources is a cache of the metadata, and only the metadata, of
// Secrets: a HostedCluster's pull secret is the user's, unlabelled and in
// any namespace, and Kubernetes cannot watch a list of names. The
// credentials of every Secret are not cached; those a HostedCluster names
// are read past the cache once per resourceVersion (userSecrets). It runs
// on every replica.
func pullSecretSources(mgr ctrl.Manager) (cache.Cache, error) {
	return addStandbyCache(mgr, "pull secrets' metadata", nil)
}

// indexPullSecrets indexes HostedClusters by their pull secret.
func indexPullSecrets(ctx context.Context, mgr ctrl.Manager) error {
	err := mgr.GetFieldIndexer().IndexField(ctx, &hyperv1.HostedCluster{}, pullSecretIndex, func(obj client.Object) []string {
		hc := obj.(*hyperv1.HostedCluster)
		keys := []string{hc.Namespace + "/" + hc.Spec.PullSecret.Name}
		for _, name := range hyperv1.EncryptionKeySecrets(hc.Spec.SecretEncryption) {
			keys = append(keys, hc.Namespace+"/"+name)
		}
		return keys
	})
	if err != nil {
		return fmt.Errorf("failed to index HostedClusters by pull secret: %w", err)
	}
	return nil
}

// pullSecretSource tells the HostedClusters that name a Secret as pull
// secret or secret encryption key when it appears, changes or goes: a
// changed pull secret or key is copied again within seconds, and one
// created after its cluster is picked up at once, not after the error
// backoff. The credentials themselves are read past the cache, once per
// change (userSecrets). secrets is r.pullSecrets, as the term sees it.
func (r *Reconciler) pullSecretSource(secrets cache.Cache) source.Source {
	changed := predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld.GetResourceVersion() != e.ObjectNew.GetResourceVersion()
		},
	}
	return source.Kind(secrets, client.Object(secretMetadata()), handler.EnqueueRequestsFromMapFunc(r.clustersOfPullSecret), changed)
}

// clustersOfPullSecret maps a Secret to the HostedClusters that name it.
func (r *Reconciler) clustersOfPullSecret(ctx context.Context, obj client.Object) []reconcile.Request {
	list := &hyperv1.HostedClusterList{}
	key := obj.GetNamespace() + "/" + obj.GetName()
	if err := r.Client.List(ctx, list, client.InNamespace(obj.GetNamespace()), client.MatchingFields{pullSecretIndex: key}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to list the HostedClusters of a pull secret", "secret", key)
		return nil
	}
	if len(list.Items) == 0 {
		r.secrets.forget(client.ObjectKeyFromObject(obj))
	}
	return requestsFor(list)
}
