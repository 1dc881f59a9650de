package releaseinfo

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	imagev1 "github.com/openshift/api/image/v1"
	"sigs.k8s.io/yaml"
)

const (
	// ImageReferencesFile is the payload file naming the component images,
	// an ImageStream.
	ImageReferencesFile = "release-manifests/image-references"
	// ReleaseMetadataFile is the payload file carrying the release version.
	ReleaseMetadataFile = "release-manifests/release-metadata"

	// maxReleaseFileSize bounds how much of one release file is read.
	maxReleaseFileSize = 16 << 20

	whiteoutPrefix = ".wh."
	opaqueWhiteout = ".wh..wh..opq"
)

var releaseFiles = []string{ImageReferencesFile, ReleaseMetadataFile}

// readReleaseFiles returns the release files found in img. Layers are read
// newest first, so a file in a newer layer wins over the same file in an
// older one, and reading stops once every release file is resolved.
func readReleaseFiles(img v1.Image) (map[string][]byte, error) {
	layers, err := img.Layers()
	if err != nil {
		return nil, fmt.Errorf("failed to list the image's layers: %w", err)
	}
	found := map[string][]byte{}
	// resolved holds the files found or whited out by a newer layer.
	resolved := map[string]bool{}
	for i := len(layers) - 1; i >= 0 && len(resolved) < len(releaseFiles); i-- {
		if err := readLayer(layers[i], found, resolved); err != nil {
			return nil, err
		}
	}
	return found, nil
}

// readLayer records in found the release files that layer holds and that no
// newer layer resolved, and marks as resolved those it holds or whites out.
func readLayer(layer v1.Layer, found map[string][]byte, resolved map[string]bool) error {
	digest, _ := layer.Digest()
	rc, err := layer.Uncompressed()
	if err != nil {
		return fmt.Errorf("failed to open layer %s: %w", digest, err)
	}
	defer func() { _ = rc.Close() }()

	inLayer := map[string][]byte{}
	hidden := map[string]bool{}
	tr := tar.NewReader(rc)
	for len(inLayer)+len(resolved) < len(releaseFiles) {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("failed to read layer %s: %w", digest, err)
		}
		entry := cleanEntryName(hdr.Name)
		dir, base := path.Split(entry)
		switch {
		case base == opaqueWhiteout:
			for _, f := range releaseFiles {
				if path.Dir(f)+"/" == dir {
					hidden[f] = true
				}
			}
		case strings.HasPrefix(base, whiteoutPrefix):
			hidden[dir+strings.TrimPrefix(base, whiteoutPrefix)] = true
		case isReleaseFile(entry) && !resolved[entry] && hdr.Typeflag == tar.TypeReg:
			data, err := io.ReadAll(io.LimitReader(tr, maxReleaseFileSize+1))
			if err != nil {
				return fmt.Errorf("failed to read %s from layer %s: %w", entry, digest, err)
			}
			if len(data) > maxReleaseFileSize {
				return fmt.Errorf("%w: %s is larger than %d bytes", ErrMalformed, entry, maxReleaseFileSize)
			}
			inLayer[entry] = data
		}
	}
	for _, f := range releaseFiles {
		if resolved[f] {
			continue
		}
		if data, ok := inLayer[f]; ok {
			found[f] = data
			resolved[f] = true
		} else if hidden[f] {
			resolved[f] = true
		}
	}
	return nil
}

func cleanEntryName(name string) string {
	return strings.TrimLeft(path.Clean("/"+name), "/")
}

func isReleaseFile(name string) bool {
	for _, f := range releaseFiles {
		if name == f {
			return true
		}
	}
	return false
}

// releaseMetadata is release-manifests/release-metadata, e.g.
// {"kind":"cincinnati-metadata-v0","version":"4.17.0"}.
type releaseMetadata struct {
	Kind    string `json:"kind"`
	Version string `json:"version"`
}

// parseReleaseFiles returns the version and component images the release
// files name. Errors wrap ErrMalformed and name the file at fault.
func parseReleaseFiles(files map[string][]byte) (string, map[string]string, error) {
	var missing []string
	for _, f := range releaseFiles {
		if _, ok := files[f]; !ok {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		return "", nil, fmt.Errorf("%w: %s not found in the image; check that the pull spec names an OpenShift release payload", ErrMalformed, strings.Join(missing, " and "))
	}

	var metadata releaseMetadata
	if err := json.Unmarshal(files[ReleaseMetadataFile], &metadata); err != nil {
		return "", nil, fmt.Errorf("%w: failed to decode %s as JSON: %w", ErrMalformed, ReleaseMetadataFile, err)
	}
	version := strings.TrimSpace(metadata.Version)
	if version == "" {
		return "", nil, fmt.Errorf("%w: %s has no version", ErrMalformed, ReleaseMetadataFile)
	}

	var stream imagev1.ImageStream
	if err := yaml.Unmarshal(files[ImageReferencesFile], &stream); err != nil {
		return "", nil, fmt.Errorf("%w: failed to decode %s as an ImageStream: %w", ErrMalformed, ImageReferencesFile, err)
	}
	if stream.Kind != "" && stream.Kind != "ImageStream" {
		return "", nil, fmt.Errorf("%w: %s is a %s, not an ImageStream", ErrMalformed, ImageReferencesFile, stream.Kind)
	}
	components := map[string]string{}
	for _, tag := range stream.Spec.Tags {
		if tag.Name == "" || tag.From == nil || tag.From.Kind != "DockerImage" || tag.From.Name == "" {
			continue
		}
		components[tag.Name] = tag.From.Name
	}
	if len(components) == 0 {
		return "", nil, fmt.Errorf("%w: %s names no component images (no spec.tags with a DockerImage)", ErrMalformed, ImageReferencesFile)
	}
	return version, components, nil
}
