package localcluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/hypershift-le/hypershift/hack/images"
	"github.com/hypershift-le/hypershift/support/releaseinfo/releasetest"
)

// Versions are the release payloads the local registry serves, oldest first.
var Versions = []string{"4.17.0", "4.17.1"}

// Registry is the local cluster's registry: releasetest's registry (the
// one the tests use), holding one payload per version.
type Registry struct {
	// Host is host:port: how images name it (127.0.0.1, or on real nodes
	// the host's address on the nodes' network, which this machine, the
	// nodes and their pods reach alike).
	Host string
	// pushHost is where this process pushes to: 127.0.0.1.
	pushHost string
	// Releases maps each version to its payload's pull spec.
	Releases map[string]string
	registry *releasetest.Registry
}

// StartRegistry serves a registry on address (host:port; port 0 picks a
// free one) and pushes a payload per version, whose image references
// (hypershift, etcd, hyperkube) Push fills. Images name the registry at
// host (with the port it listens on; 127.0.0.1 when empty). Blobs are
// kept in blobDir when set.
func StartRegistry(ctx context.Context, address, host, blobDir string) (*Registry, error) {
	var opts []releasetest.Option
	if blobDir != "" {
		opts = append(opts, releasetest.WithBlobDir(blobDir))
	}
	served, err := releasetest.Start(address, opts...)
	if err != nil {
		return nil, err
	}
	_, port, _ := net.SplitHostPort(served.Host())
	if host == "" {
		host = "127.0.0.1"
	}
	r := &Registry{Host: net.JoinHostPort(host, port), pushHost: served.Host(), Releases: map[string]string{}, registry: served}
	for _, version := range Versions {
		refs := map[string]string{}
		for tag := range images.Payload {
			refs[tag] = r.Image(tag, version)
		}
		if _, _, err := served.PushReleaseContext(ctx, "ocp-release:"+version, version, refs); err != nil {
			return nil, errors.Join(err, r.Close())
		}
		r.Releases[version] = r.Image("ocp-release", version)
	}
	return r, nil
}

// Port is the registry's port.
func (r *Registry) Port() string {
	_, port, _ := net.SplitHostPort(r.Host)
	return port
}

// Image returns the pull spec of repository:tag in this registry.
func (r *Registry) Image(repository, tag string) string {
	return r.Host + "/" + repository + ":" + tag
}

// payloadSpecs are the images the payloads name (each version's tags) and
// the operators' image as hypershift:latest, by repository:tag.
func payloadSpecs() map[string]images.Spec {
	want := map[string]images.Spec{"hypershift:latest": images.Product}
	for _, version := range Versions {
		for tag, spec := range images.Payload {
			want[tag+":"+version] = spec
		}
	}
	return want
}

// Push builds images (repository:tag to spec) from the binaries in binDir
// and pushes them; images of the same spec are built once. Each layer is
// written straight into the registry's blob directory, so the push uploads
// manifests and configs only: the registry keeps an upload in memory, and
// a test process built with -race pays several times what it holds.
func (r *Registry) Push(ctx context.Context, binDir string, want map[string]images.Spec) error {
	refsOf := map[string][]string{}
	specs := map[string]images.Spec{}
	for ref, spec := range want {
		key := fmt.Sprint(spec)
		refsOf[key] = append(refsOf[key], ref)
		specs[key] = spec
	}
	for _, key := range slices.Sorted(maps.Keys(refsOf)) {
		refs := slices.Sorted(slices.Values(refsOf[key]))
		var img v1.Image
		var err error
		if dir := r.registry.BlobDir(); dir != "" {
			img, err = images.BuildInto(specs[key], binDir, nil, dir)
		} else {
			img, err = images.Build(specs[key], binDir, nil)
		}
		if err != nil {
			return fmt.Errorf("image %s: %w", refs[0], err)
		}
		for _, ref := range refs {
			tag, err := name.NewTag(r.pushHost+"/"+ref, name.Insecure)
			if err != nil {
				return err
			}
			if err := remote.Write(tag, img, remote.WithContext(ctx)); err != nil {
				return fmt.Errorf("failed to push %s: %w", tag, err)
			}
		}
	}
	return nil
}

// Retag makes repository:to name the manifest repository:from names now,
// as a re-push of a tag does: a tag that moves to another payload.
func (r *Registry) Retag(ctx context.Context, repository, from, to string) error {
	src, err := name.NewTag(r.pushHost+"/"+repository+":"+from, name.Insecure)
	if err != nil {
		return err
	}
	desc, err := remote.Get(src, remote.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("failed to read %s: %w", src, err)
	}
	dst, err := name.NewTag(r.pushHost+"/"+repository+":"+to, name.Insecure)
	if err != nil {
		return err
	}
	if err := remote.Tag(dst, desc, remote.WithContext(ctx)); err != nil {
		return fmt.Errorf("failed to tag %s as %s: %w", src, dst, err)
	}
	return nil
}

// Close stops the registry.
func (r *Registry) Close() error {
	return r.registry.Close()
}
