package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
)

// checkPullSecret refuses a --pull-secret file that is not a
// .dockerconfigjson: a JSON object with an "auths" object.
func checkPullSecret(data []byte) error {
	var parsed struct {
		Auths map[string]json.RawMessage `json:"auths"`
	}
	if err := json.Unmarshal(data, &parsed); err != nil {
		return fmt.Errorf("--pull-secret is not a .dockerconfigjson file (JSON with an \"auths\" object): %w", err)
	}
	if parsed.Auths == nil {
		return fmt.Errorf("--pull-secret has no \"auths\" object: it must be a .dockerconfigjson file such as the one `podman login --authfile` writes")
	}
	return nil
}

// applyPullSecret creates the pull secret, or updates the data of one an
// earlier `create cluster` created (SafeToDeleteWithClusterLabel); a
// Secret of that name without the label is the user's and is left as it
// is.
func applyPullSecret(ctx context.Context, c client.Client, want *corev1.Secret, out io.Writer) error {
	k := client.ObjectKeyFromObject(want)
	err := c.Create(ctx, want)
	switch {
	case err == nil:
		_, _ = fmt.Fprintf(out, "Secret %s created\n", k)
		return nil
	case !apierrors.IsAlreadyExists(err):
		return fmt.Errorf("failed to create Secret %s: %w", k, err)
	}
	live := &corev1.Secret{}
	if err := c.Get(ctx, k, live); err != nil {
		return fmt.Errorf("failed to get Secret %s: %w", k, err)
	}
	if live.Labels[hyperv1.SafeToDeleteWithClusterLabel] != "true" {
		_, _ = fmt.Fprintf(out, "Secret %s exists and was not created by hypershift: left as it is (its credentials are used)\n", k)
		return nil
	}
	if bytes.Equal(live.Data[corev1.DockerConfigJsonKey], want.Data[corev1.DockerConfigJsonKey]) {
		_, _ = fmt.Fprintf(out, "Secret %s unchanged\n", k)
		return nil
	}
	live.Data = want.Data
	if err := c.Update(ctx, live); err != nil {
		return fmt.Errorf("failed to update Secret %s: %w", k, err)
	}
	_, _ = fmt.Fprintf(out, "Secret %s updated with the credentials of --pull-secret\n", k)
	return nil
}

// deletePullSecret deletes the HostedCluster's pull secret when `create
// cluster` created it (SafeToDeleteWithClusterLabel).
func deletePullSecret(ctx context.Context, c client.Client, hc *hyperv1.HostedCluster, out io.Writer) error {
	k := client.ObjectKey{Namespace: hc.Namespace, Name: hc.Spec.PullSecret.Name}
	secret := &corev1.Secret{}
	if err := c.Get(ctx, k, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("failed to get pull secret %s: %w", k, err)
	}
	if secret.Labels[hyperv1.SafeToDeleteWithClusterLabel] != "true" {
		return nil
	}
	// Only this version of it: a Secret re-created meanwhile is not ours.
	err := c.Delete(ctx, secret, client.Preconditions{UID: &secret.UID, ResourceVersion: &secret.ResourceVersion})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("failed to delete pull secret %s: %w", k, err)
	}
	_, _ = fmt.Fprintf(out, "Secret %s deleted (created by hypershift create cluster)\n", k)
	return nil
}
