package releasetest

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	imagev1 "github.com/openshift/api/image/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BuildReleaseFiles returns the release-manifests files of a payload: an
// image-references ImageStream named version whose tags name components
// (tag name -> pull spec), and release-metadata carrying version.
func BuildReleaseFiles(version string, components map[string]string) (map[string][]byte, error) {
	names := make([]string, 0, len(components))
	for n := range components {
		names = append(names, n)
	}
	sort.Strings(names)
	stream := imagev1.ImageStream{
		TypeMeta:   metav1.TypeMeta{APIVersion: "image.openshift.io/v1", Kind: "ImageStream"},
		ObjectMeta: metav1.ObjectMeta{Name: version},
	}
	for _, n := range names {
		stream.Spec.Tags = append(stream.Spec.Tags, imagev1.TagReference{
			Name: n,
			From: &corev1.ObjectReference{Kind: "DockerImage", Name: components[n]},
		})
	}
	references, err := json.Marshal(stream)
	if err != nil {
		return nil, fmt.Errorf("failed to encode image-references: %w", err)
	}
	metadata, err := json.Marshal(map[string]any{
		"kind":     "cincinnati-metadata-v0",
		"version":  version,
		"previous": []string{},
		"metadata": map[string]string{},
	})
	if err != nil {
		return nil, fmt.Errorf("failed to encode release-metadata: %w", err)
	}
	return map[string][]byte{ImageReferencesFile: references, ReleaseMetadataFile: metadata}, nil
}

// BuildImage returns an image with one layer per element of layers.
func BuildImage(layers ...map[string][]byte) (v1.Image, error) {
	img := empty.Image
	for _, files := range layers {
		layer, err := tarLayer(files)
		if err != nil {
			return nil, fmt.Errorf("failed to build layer: %w", err)
		}
		if img, err = mutate.AppendLayers(img, layer); err != nil {
			return nil, fmt.Errorf("failed to append layer: %w", err)
		}
	}
	return img, nil
}

// Push writes img to ref (host/repo:tag) and returns its digest. auth may
// be nil for anonymous access.
func Push(ctx context.Context, ref string, img v1.Image, auth authn.Authenticator) (string, error) {
	parsed, err := name.ParseReference(ref)
	if err != nil {
		return "", fmt.Errorf("failed to parse %q: %w", ref, err)
	}
	opts := []remote.Option{remote.WithContext(ctx)}
	if auth != nil {
		opts = append(opts, remote.WithAuth(auth))
	}
	if err := remote.Write(parsed, img, opts...); err != nil {
		return "", fmt.Errorf("failed to push %s: %w", ref, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return "", fmt.Errorf("failed to compute the digest of %s: %w", ref, err)
	}
	return digest.String(), nil
}
