package hostedcluster

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// userSecrets reads the Secrets HostedClusters name (pull secrets, secret
// encryption keys) once per change rather than once per pass: the cache of
// Secrets' metadata (pullSecretSources) tells a Secret's resourceVersion,
// and the data last read past the cache is reused while that version is
// current. A Secret the metadata cache does not show, or shows at another
// version, is read from the API server, so a missing Secret is always
// confirmed there. Only Secrets a HostedCluster named are held, until they
// are found gone or change while no HostedCluster names them
// (clustersOfPullSecret); callers never modify the data.
type userSecrets struct {
	// metadata reads Secrets' metadata from the cache that watches them.
	metadata client.Reader
	// api reads Secrets from the API server.
	api client.Reader

	mu   sync.Mutex
	read map[client.ObjectKey]readSecret
}

// readSecret is a Secret's data as read at a resourceVersion.
type readSecret struct {
	resourceVersion string
	data            map[string][]byte
}

// Data returns the data of Secret key; the error is the API server's
// (apierrors.IsNotFound tells a missing Secret).
func (u *userSecrets) Data(ctx context.Context, key client.ObjectKey) (map[string][]byte, error) {
	meta := secretMetadata()
	if err := u.metadata.Get(ctx, key, meta); err == nil {
		u.mu.Lock()
		got, ok := u.read[key]
		u.mu.Unlock()
		if ok && got.resourceVersion == meta.ResourceVersion {
			return got.data, nil
		}
	}
	secret := &corev1.Secret{}
	if err := u.api.Get(ctx, key, secret); err != nil {
		if apierrors.IsNotFound(err) {
			u.forget(key)
		}
		return nil, err
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.read == nil {
		u.read = map[client.ObjectKey]readSecret{}
	}
	u.read[key] = readSecret{resourceVersion: secret.ResourceVersion, data: secret.Data}
	return secret.Data, nil
}

// forget drops what was read of Secret key.
func (u *userSecrets) forget(key client.ObjectKey) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.read, key)
}
