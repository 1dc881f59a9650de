package localcluster

import (
	"context"
	"errors"

	"github.com/hypershift-le/hypershift/support/releaseinfo/releasetest"
)

// Versions are the release payloads the local registry serves, oldest first.
var Versions = []string{"4.17.0", "4.17.1"}

// Registry is the local cluster's registry: releasetest's registry (the
// one the tests use) on 127.0.0.1, holding one payload per version.
type Registry struct {
	// Host is host:port.
	Host string
	// Releases maps each version to its payload's pull spec.
	Releases map[string]string
	// tags maps the pull spec of every payload image to its tag in the
	// payload (image-references).
	tags     map[string]string
	registry *releasetest.Registry
}

// StartRegistry serves a registry on address (host:port; port 0 picks a
// free one) and pushes a payload per version, whose images (hypershift,
// etcd, hyperkube) the local cluster maps to binaries.
func StartRegistry(ctx context.Context, address string) (*Registry, error) {
	served, err := releasetest.Start(address)
	if err != nil {
		return nil, err
	}
	r := &Registry{Host: served.Host(), Releases: map[string]string{}, tags: map[string]string{}, registry: served}
	for _, version := range Versions {
		refs := map[string]string{}
		for tag := range payloadImages {
			refs[tag] = r.Image(tag, version)
			r.tags[refs[tag]] = tag
		}
		// The operators' own image is tagged latest too.
		r.tags[r.Image("hypershift", "latest")] = "hypershift"
		if _, _, err := served.PushReleaseContext(ctx, "ocp-release:"+version, version, refs); err != nil {
			return nil, errors.Join(err, r.Close())
		}
		r.Releases[version] = r.Image("ocp-release", version)
	}
	return r, nil
}

// Image returns the pull spec of repository:tag in this registry.
func (r *Registry) Image(repository, tag string) string {
	return r.Host + "/" + repository + ":" + tag
}

// Tag returns the payload tag of an image pull spec of this registry.
func (r *Registry) Tag(image string) (string, bool) {
	tag, ok := r.tags[image]
	return tag, ok
}

// Close stops the registry.
func (r *Registry) Close() error {
	return r.registry.Close()
}
