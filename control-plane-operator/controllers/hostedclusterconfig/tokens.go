package hostedclusterconfig

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/apply"
)

// bootstrapToken is the hosted cluster's bootstrap token Secret for a
// NodePool's token Secret in the control-plane namespace: it authenticates
// as a member of hyperv1.NodeBootstrapGroup until it expires.
func bootstrapToken(pool *corev1.Secret) *corev1.Secret {
	id := string(pool.Data[bootstrapapi.BootstrapTokenIDKey])
	return &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: metav1.NamespaceSystem, Name: bootstraputil.BootstrapTokenSecretName(id),
			Labels:      map[string]string{managedByLabel: FieldOwner, hyperv1.NodePoolLabel: pool.Labels[hyperv1.NodePoolLabel]},
			Annotations: map[string]string{hyperv1.NodePoolConfigAnnotation: pool.Annotations[hyperv1.NodePoolConfigAnnotation]},
		},
		Type: corev1.SecretTypeBootstrapToken,
		Data: map[string][]byte{
			bootstrapapi.BootstrapTokenIDKey:               pool.Data[bootstrapapi.BootstrapTokenIDKey],
			bootstrapapi.BootstrapTokenSecretKey:           pool.Data[bootstrapapi.BootstrapTokenSecretKey],
			bootstrapapi.BootstrapTokenExpirationKey:       pool.Data[bootstrapapi.BootstrapTokenExpirationKey],
			bootstrapapi.BootstrapTokenUsageAuthentication: []byte("true"),
			bootstrapapi.BootstrapTokenExtraGroupsKey:      []byte(hyperv1.NodeBootstrapGroup),
			bootstrapapi.BootstrapTokenDescriptionKey:      []byte("joins the machines of NodePool " + pool.Labels[hyperv1.NodePoolLabel]),
		},
	}
}

// reconcileTokens installs the current token of every NodePool of the
// control plane in the hosted cluster, and removes the tokens of pools
// that are gone. A pool's earlier token of the same config stays until it
// expires (the hosted token cleaner deletes it): a machine that read it
// just before a rotation still joins. One of an earlier config (another
// release, another kubelet configuration) is revoked: no machine joins
// with what the pool no longer runs.
func (r *Reconciler) reconcileTokens(ctx context.Context, namespace string, hosted client.Client) error {
	pools := &corev1.SecretList{}
	if err := r.Client.List(ctx, pools, client.InNamespace(namespace), client.HasLabels{hyperv1.NodePoolLabel}); err != nil {
		return err
	}
	live := map[string]string{} // pool -> its current token's config
	applier := apply.Applier{Client: hosted, FieldOwner: FieldOwner}
	var errs []error
	for i := range pools.Items {
		pool := &pools.Items[i]
		if pool.Name != hyperv1.NodePoolTokenSecretName(pool.Labels[hyperv1.NodePoolLabel]) || len(pool.Data[bootstrapapi.BootstrapTokenIDKey]) == 0 {
			continue
		}
		live[pool.Labels[hyperv1.NodePoolLabel]] = pool.Annotations[hyperv1.NodePoolConfigAnnotation]
		if _, err := applier.Apply(ctx, bootstrapToken(pool)); err != nil {
			errs = append(errs, fmt.Errorf("failed to install the bootstrap token of NodePool %s in the hosted cluster: %w", pool.Labels[hyperv1.NodePoolLabel], err))
		}
	}
	installed := &corev1.SecretList{}
	if err := hosted.List(ctx, installed, client.InNamespace(metav1.NamespaceSystem), client.MatchingLabels{managedByLabel: FieldOwner}, client.HasLabels{hyperv1.NodePoolLabel}); err != nil {
		return errors.Join(append(errs, err)...)
	}
	for i := range installed.Items {
		token := &installed.Items[i]
		pool := token.Labels[hyperv1.NodePoolLabel]
		config, isLive := live[pool]
		why := "deleted NodePool " + pool
		if isLive {
			// Tokens that name no config (installed before configs were
			// named) are left to expire.
			had := token.Annotations[hyperv1.NodePoolConfigAnnotation]
			if config == "" || had == "" || had == config {
				continue
			}
			why = "NodePool " + pool + "'s earlier config"
		}
		if err := hosted.Delete(ctx, token); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("failed to revoke the bootstrap token of %s: %w", why, err))
		}
	}
	return errors.Join(errs...)
}
