package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/hypershift-le/hypershift/support/releaseinfo/releasetest"
)

// Versions are the release payloads the local registry serves, oldest first.
var Versions = []string{"4.17.0", "4.17.1"}

// Registry is the local cluster's registry: go-containerregistry's
// in-memory registry on 127.0.0.1, holding one payload per version.
type Registry struct {
	// Host is host:port.
	Host string
	// Releases maps each version to its payload's pull spec.
	Releases map[string]string
	// tags maps the pull spec of every payload image to its tag in the
	// payload (image-references).
	tags   map[string]string
	server *http.Server
}

// StartRegistry serves a registry on address (host:port; port 0 picks a
// free one) and pushes a payload per version, whose images (hypershift,
// etcd, hyperkube) the local cluster maps to binaries.
func StartRegistry(ctx context.Context, address string) (*Registry, error) {
	l, err := net.Listen("tcp", address)
	if err != nil {
		return nil, fmt.Errorf("failed to listen for the registry on %s: %w", address, err)
	}
	r := &Registry{
		Host:     l.Addr().String(),
		Releases: map[string]string{},
		tags:     map[string]string{},
		server:   &http.Server{Handler: registry.New(registry.Logger(log.New(io.Discard, "", 0))), ReadHeaderTimeout: 10 * time.Second},
	}
	go func() { _ = r.server.Serve(l) }()
	for _, version := range Versions {
		refs := map[string]string{}
		for tag := range payloadImages {
			refs[tag] = r.Image(tag, version)
			r.tags[refs[tag]] = tag
		}
		// The operators' own image is tagged latest too.
		r.tags[r.Image("hypershift", "latest")] = "hypershift"
		files, err := releasetest.BuildReleaseFiles(version, refs)
		if err != nil {
			return nil, errors.Join(err, r.Close())
		}
		img, err := releasetest.BuildImage(files)
		if err != nil {
			return nil, errors.Join(err, r.Close())
		}
		ref := r.Image("ocp-release", version)
		if _, err := releasetest.Push(ctx, ref, img, nil); err != nil {
			return nil, errors.Join(err, r.Close())
		}
		r.Releases[version] = ref
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
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return r.server.Shutdown(ctx)
}
