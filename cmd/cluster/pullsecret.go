package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// newPullSecret is the Secret `create cluster` makes for a HostedCluster's
// credentials, labelled (SafeToDeleteWithClusterLabel) so that update and
// destroy know it for theirs.
func newPullSecret(namespace, name string, data []byte) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{hyperv1.SafeToDeleteWithClusterLabel: "true"}},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: data},
	}
}

// pullSecretChange is what writing new credentials does to a pull secret:
// create it (live is nil), or replace the data of the version read. A
// Secret that exists without the label is the user's (userOwned): it may be
// shared or managed elsewhere, and is not written.
type pullSecretChange struct {
	want, live *corev1.Secret
	userOwned  bool
}

// planPullSecret reads the Secret want names and decides what to do.
func planPullSecret(ctx context.Context, c client.Client, want *corev1.Secret) (*pullSecretChange, error) {
	live := &corev1.Secret{}
	switch err := c.Get(ctx, client.ObjectKeyFromObject(want), live); {
	case apierrors.IsNotFound(err):
		return &pullSecretChange{want: want}, nil
	case err != nil:
		return nil, fmt.Errorf("failed to get pull secret %s: %w", client.ObjectKeyFromObject(want), err)
	}
	return &pullSecretChange{want: want, live: live, userOwned: live.Labels[hyperv1.SafeToDeleteWithClusterLabel] != "true"}, nil
}

// apply creates the Secret, or updates the version planned from, so that a
// change made meanwhile is not overwritten; a user's Secret is left as it
// is.
func (p *pullSecretChange) apply(ctx context.Context, c client.Client, out io.Writer) error {
	k := client.ObjectKeyFromObject(p.want)
	switch {
	case p.userOwned:
		_, _ = fmt.Fprintf(out, "Secret %s exists and was not created by hypershift: left as it is (its credentials are used)\n", k)
		return nil
	case p.live == nil:
		if err := c.Create(ctx, p.want); err != nil {
			return fmt.Errorf("failed to create pull secret %s: %w", k, err)
		}
		_, _ = fmt.Fprintf(out, "Secret %s created\n", k)
		return nil
	case bytes.Equal(p.live.Data[corev1.DockerConfigJsonKey], p.want.Data[corev1.DockerConfigJsonKey]):
		_, _ = fmt.Fprintf(out, "Secret %s unchanged\n", k)
		return nil
	}
	updated := p.live.DeepCopy()
	updated.Data = p.want.Data
	if err := c.Update(ctx, updated); err != nil {
		return fmt.Errorf("failed to update pull secret %s: %w", k, err)
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
