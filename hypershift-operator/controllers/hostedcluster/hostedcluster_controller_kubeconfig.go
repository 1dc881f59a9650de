package hostedcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/render"
)

// reconcileKubeconfig copies the admin kubeconfig the control-plane-operator
// publishes (the Secret and key the HostedControlPlane's status.kubeConfig
// names) into the HostedCluster's namespace as <name>-admin-kubeconfig,
// and points status.kubeconfig at the copy. Until the control plane
// publishes one, there is nothing to copy and status says nothing. It runs
// only once the control-plane namespace is known to be this
// HostedCluster's: it reads from it, and writes only in the HostedCluster's
// own namespace.
func (r *Reconciler) reconcileKubeconfig(ctx context.Context, s *scope) (ctrl.Result, error) {
	data, err := r.publishedKubeconfig(ctx, s)
	if err != nil || data == nil {
		return ctrl.Result{}, err
	}
	copied := render.AdminKubeconfig(render.Inputs{HostedCluster: s.hc, OperatorShard: r.operatorShard()}, data)
	if _, err := r.applier().Apply(ctx, copied); err != nil {
		return ctrl.Result{}, err
	}
	s.kubeconfig = copied.Name
	return ctrl.Result{}, nil
}

// publishedKubeconfig returns the kubeconfig the HostedControlPlane
// reports, or nil while it reports none.
func (r *Reconciler) publishedKubeconfig(ctx context.Context, s *scope) ([]byte, error) {
	hcp := &hyperv1.HostedControlPlane{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: s.hc.Name}, hcp); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	ref := hcp.Status.KubeConfig
	if ref == nil {
		return nil, nil
	}
	// The control-plane-operator publishes under AdminKubeconfigSecretName,
	// which the controller caches and watches; any other name is read from
	// the API server.
	reader := client.Reader(r.kubeconfigs)
	if ref.Name != hyperv1.AdminKubeconfigSecretName {
		reader = r.APIReader
	}
	source := &corev1.Secret{}
	key := client.ObjectKey{Namespace: s.namespace, Name: ref.Name}
	if err := reader.Get(ctx, key, source); err != nil {
		if apierrors.IsNotFound(err) {
			// The control-plane-operator re-creates it; its watch brings
			// this HostedCluster back.
			return nil, nil
		}
		return nil, fmt.Errorf("failed to get the admin kubeconfig %s: %w", key, err)
	}
	if len(source.Data[ref.Key]) == 0 {
		return nil, nil
	}
	return source.Data[ref.Key], nil
}

// deleteKubeconfig deletes the admin kubeconfig copy, if it is this
// HostedCluster's (a Secret of that name someone else made stays).
func (r *Reconciler) deleteKubeconfig(ctx context.Context, s *scope) error {
	secret := &corev1.Secret{}
	key := client.ObjectKey{Namespace: s.hc.Namespace, Name: hyperv1.AdminKubeconfigName(s.hc.Name)}
	if err := r.APIReader.Get(ctx, key, secret); err != nil {
		return client.IgnoreNotFound(err)
	}
	if secret.Annotations[hyperv1.ClusterAnnotation] != s.key() || !secret.DeletionTimestamp.IsZero() {
		return nil
	}
	if err := r.Client.Delete(ctx, secret, client.Preconditions{UID: &secret.UID}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("failed to delete the admin kubeconfig %s: %w", key, err)
	}
	return nil
}
