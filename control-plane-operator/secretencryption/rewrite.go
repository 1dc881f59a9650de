// Package secretencryption rewrites the Secrets of a hosted cluster, so
// that each is stored encrypted with the kube-apiserver's active key.
//
// The kube-apiserver encrypts a Secret when it writes it, with the first
// key of its encryption configuration, and reads it with whichever key of
// that configuration it was written with. After the active key changes
// (encryption turned on, or a key rotated), Secrets written before are
// still stored under the previous key, or in plain text, until they are
// written again. Rewrite writes each one back unchanged: the API server
// stores again, with the active key, exactly the Secrets it read with
// another one ("stale" reads), and skips the others without a write. This
// is what Kubernetes' documentation does with `kubectl get secrets -A -o
// json | kubectl replace -f -`.
package secretencryption

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// pageSize bounds each list: a cluster with many large Secrets is read a
// page at a time.
const pageSize = 200

// Result counts what Rewrite did.
type Result struct {
	// Listed is how many Secrets were read.
	Listed int
	// Rewritten is how many the API server stored again: those it had not
	// stored with the active key.
	Rewritten int
}

// Rewrite writes every Secret of the cluster c reaches back unchanged,
// after the kube-apiserver runs the encryption configuration to rewrite
// with (on every replica). A Secret changed or deleted since it was listed
// is skipped: whoever changed it wrote it with the active key.
func Rewrite(ctx context.Context, c client.Client) (Result, error) {
	var result Result
	list := &corev1.SecretList{}
	opts := []client.ListOption{client.Limit(pageSize)}
	for {
		if err := c.List(ctx, list, opts...); err != nil {
			return result, fmt.Errorf("failed to list the hosted cluster's Secrets: %w", err)
		}
		for i := range list.Items {
			secret := &list.Items[i]
			result.Listed++
			before := secret.ResourceVersion
			switch err := c.Update(ctx, secret); {
			case apierrors.IsConflict(err), apierrors.IsNotFound(err):
			case err != nil:
				return result, fmt.Errorf("failed to rewrite Secret %s/%s: %w", secret.Namespace, secret.Name, err)
			case secret.ResourceVersion != before:
				result.Rewritten++
			}
		}
		if list.Continue == "" {
			return result, nil
		}
		opts = []client.ListOption{client.Limit(pageSize), client.Continue(list.Continue)}
	}
}
