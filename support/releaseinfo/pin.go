package releaseinfo

import (
	"context"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// componentPinTimeout bounds the resolution of one component image's tag:
// a registry that does not answer keeps the tag, it does not hold up the
// payload.
const componentPinTimeout = 5 * time.Second

// PinnedPullSpec returns pullSpec pinned to digest: <repository>@<digest>,
// the registry and repository as pullSpec writes them, its tag dropped. A
// pull spec that already names a digest is returned as it is: the digest
// it names is the one its user chose.
func PinnedPullSpec(pullSpec, digest string) string {
	pullSpec = strings.TrimSpace(pullSpec)
	if HasDigest(pullSpec) || digest == "" {
		return pullSpec
	}
	return repository(pullSpec) + "@" + digest
}

// HasDigest reports whether pullSpec names a digest
// (<repository>[:<tag>]@sha256:...): the image it names cannot change.
func HasDigest(pullSpec string) bool {
	return DigestOf(pullSpec) != ""
}

// DigestOf returns the digest pullSpec names, or "" when it names a tag.
func DigestOf(pullSpec string) string {
	if i := strings.LastIndex(pullSpec, "@"); i >= 0 {
		return pullSpec[i+1:]
	}
	return ""
}

// repository is pullSpec without its tag or digest.
func repository(pullSpec string) string {
	if i := strings.LastIndex(pullSpec, "@"); i >= 0 {
		pullSpec = pullSpec[:i]
	}
	// A ':' after the last '/' starts the tag; one before it is a port.
	if i := strings.LastIndex(pullSpec, ":"); i > strings.LastIndex(pullSpec, "/") {
		pullSpec = pullSpec[:i]
	}
	return pullSpec
}

// pinComponents returns components with every image that names a tag
// pinned to the digest its registry names for it now, so that a payload
// read once keeps naming the same images. An image whose registry cannot
// say (not pushed yet, unreachable, credentials refused) keeps its tag:
// real payloads name their images by digest, and a tag that cannot be
// resolved here is one the kubelet cannot pull either.
func (p *RegistryProvider) pinComponents(ctx context.Context, components map[string]string, opts []remote.Option) map[string]string {
	pinned := make(map[string]string, len(components))
	for tag, image := range components {
		pinned[tag] = image
		if HasDigest(image) {
			continue
		}
		if digest := p.headDigest(ctx, image, opts); digest != "" {
			pinned[tag] = PinnedPullSpec(image, digest)
		}
	}
	return pinned
}

// headDigest returns the digest the registry names for image now, or ""
// when it cannot say.
func (p *RegistryProvider) headDigest(ctx context.Context, image string, opts []remote.Option) string {
	ref, err := p.parseReference(image)
	if err != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, componentPinTimeout)
	defer cancel()
	// The later WithContext wins over the Lookup's own.
	desc, err := remote.Head(ref, append(opts[:len(opts):len(opts)], remote.WithContext(ctx))...)
	if err != nil {
		return ""
	}
	return desc.Digest.String()
}
