// Package releaseinfo reads OpenShift release payloads from a container
// registry: the version a payload carries (release-manifests/release-metadata)
// and the component images it names (release-manifests/image-references, an
// ImageStream). Payloads are immutable, so lookups are cached by digest;
// PinnedPullSpec names a payload by the digest a lookup found, so that
// what was read once is what every later reader reads.
package releaseinfo

import (
	"context"
	"errors"
)

// ReleaseImage is what a release payload says about itself.
type ReleaseImage struct {
	// PullSpec is the pull spec the payload was looked up by.
	PullSpec string
	// Digest is the payload manifest's digest, e.g. sha256:....
	Digest string
	// Version is the release version from release-metadata, e.g. 4.17.0.
	Version string
	// ComponentImages maps each image-references tag name (e.g. "hypershift",
	// "kube-apiserver", "etcd") to its image pull spec, pinned by digest
	// when the payload names a tag its registry resolves (see
	// RegistryProvider).
	ComponentImages map[string]string
}

// ComponentImage returns the image of the named component and whether the
// payload names it.
func (r *ReleaseImage) ComponentImage(name string) (string, bool) {
	image, ok := r.ComponentImages[name]
	return image, ok && image != ""
}

// Provider looks up release payloads.
type Provider interface {
	// Lookup reads the payload at pullSpec. pullSecret is the content of a
	// kubernetes.io/dockerconfigjson Secret's .dockerconfigjson key; nil
	// means anonymous access. Errors wrap one of ErrUnreachable,
	// ErrUnauthorized, ErrNotFound or ErrMalformed.
	Lookup(ctx context.Context, pullSpec string, pullSecret []byte) (*ReleaseImage, error)
}

// Errors a Lookup wraps, so callers can tell the user what to fix.
var (
	// ErrUnreachable: the registry could not be reached (DNS, connection,
	// TLS, timeout, 5xx).
	ErrUnreachable = errors.New("release registry unreachable")
	// ErrUnauthorized: the registry refused the credentials (401/403).
	ErrUnauthorized = errors.New("not authorized to pull the release image")
	// ErrNotFound: the repository, tag or digest does not exist.
	ErrNotFound = errors.New("release image not found")
	// ErrMalformed: the image exists but is not a release payload (missing
	// or undecodable release-manifests files, bad pull spec or pull secret).
	ErrMalformed = errors.New("not a valid release payload")
)
