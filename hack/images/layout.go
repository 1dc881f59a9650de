package images

import (
	"fmt"
	"os"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// WriteLayout writes images to dir as one OCI image layout, replacing what
// was there: each image named by its reference (repository:tag) in the
// org.opencontainers.image.ref.name annotation, as `ctr images import` and
// skopeo read it.
func WriteLayout(dir string, images map[string]v1.Image) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("failed to remove %s: %w", dir, err)
	}
	path, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("failed to create the image layout %s: %w", dir, err)
	}
	for ref, img := range images {
		if err := path.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": ref})); err != nil {
			return fmt.Errorf("failed to write image %s to %s: %w", ref, dir, err)
		}
	}
	return nil
}
