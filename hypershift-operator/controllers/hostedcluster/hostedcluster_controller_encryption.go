package hostedcluster

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
)

// encryptionKeys reads the key Secrets the HostedCluster's
// spec.secretEncryption names, past the cache (the HO does not cache the
// users' Secrets), by name, once per change (userSecrets). A Secret that is missing or holds no AES key
// waits on the user: what runs keeps its keys.
func (r *Reconciler) encryptionKeys(ctx context.Context, hc *hyperv1.HostedCluster) (map[string][]byte, waitKind, error) {
	names := hyperv1.EncryptionKeySecrets(hc.Spec.SecretEncryption)
	if len(names) == 0 {
		return nil, notWaiting, nil
	}
	keys := map[string][]byte{}
	for _, name := range names {
		key := client.ObjectKey{Namespace: hc.Namespace, Name: name}
		data, err := r.secrets.Data(ctx, key)
		if err != nil {
			if apierrors.IsNotFound(err) {
				return nil, waitsOnUser, fmt.Errorf("secret encryption key Secret %s not found: create it with a random key under %q, e.g. head -c 32 /dev/urandom > key && kubectl create secret generic %s -n %s --from-file=key",
					key, hyperv1.AESCBCKeySecretKey, name, hc.Namespace)
			}
			return nil, notWaiting, fmt.Errorf("failed to get secret encryption key Secret %s: %w", key, err)
		}
		aes, err := hyperv1.CheckAESCBCKey(data)
		if err != nil {
			return nil, waitsOnUser, fmt.Errorf("secret encryption key Secret %s holds no usable key: %w", key, err)
		}
		keys[name] = aes
	}
	return keys, notWaiting, nil
}

// deleteStaleEncryptionKeys deletes the copies of key Secrets the
// HostedCluster no longer names (a dropped backup key), once the
// HostedControlPlane that names the remaining ones was sent: only then
// does the control-plane-operator stop reading them. It lists only when
// this pass changed the HostedControlPlane, and not in a namespace this
// pass created (nothing in it is stale).
func (r *Reconciler) deleteStaleEncryptionKeys(ctx context.Context, s *scope) error {
	if !s.specSent || s.namespaceCreated {
		return nil
	}
	list := &corev1.SecretList{}
	if err := r.Client.List(ctx, list, client.InNamespace(s.namespace), client.MatchingLabels{hyperv1.SecretCopyLabel: hyperv1.SecretCopyEncryptionKey}); err != nil {
		return fmt.Errorf("failed to list the copies of secret encryption keys: %w", err)
	}
	var wanted []string
	for _, name := range hyperv1.EncryptionKeySecrets(s.hc.Spec.SecretEncryption) {
		wanted = append(wanted, hyperv1.SecretEncryptionKeyCopyName(name))
	}
	for i := range list.Items {
		stale := &list.Items[i]
		if slices.Contains(wanted, stale.Name) {
			continue
		}
		if err := r.Client.Delete(ctx, stale, client.Preconditions{UID: &stale.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("failed to delete %s, the copy of a secret encryption key no longer named: %w", stale.Name, err)
		}
	}
	return nil
}
