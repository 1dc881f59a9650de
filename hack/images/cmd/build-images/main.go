// Command build-images builds the project's images without a container
// engine (package images) from the static binaries in --bin, and writes
// them to --out as one OCI image layout, each tagged --tag: the product
// image hypershift, the payload's etcd and hyperkube, and pause.
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/hypershift-le/hypershift/hack/images"
)

func main() {
	bin := flag.String("bin", "bin", "The directory with the static binaries the images hold.")
	out := flag.String("out", "bin/images", "The OCI image layout to write.")
	tag := flag.String("tag", "dev", "The tag of every image.")
	version := flag.String("version", "", "The org.opencontainers.image.version label.")
	revision := flag.String("revision", "", "The org.opencontainers.image.revision label.")
	flag.Parse()
	labels := map[string]string{
		"org.opencontainers.image.source":   "https://github.com/hypershift-le/hypershift",
		"org.opencontainers.image.version":  *version,
		"org.opencontainers.image.revision": *revision,
	}
	built := map[string]v1.Image{}
	all := images.All()
	names := make([]string, 0, len(all))
	for name := range all {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		img, err := images.Build(all[name], *bin, labels)
		if err != nil {
			fmt.Fprintf(os.Stderr, "error: image %s: %v\n", name, err)
			os.Exit(1)
		}
		digest, err := img.Digest()
		if err != nil {
			fmt.Fprintf(os.Stderr, "error: image %s: %v\n", name, err)
			os.Exit(1)
		}
		ref := name + ":" + *tag
		built[ref] = img
		fmt.Printf("%s@%s\n", ref, digest)
	}
	if err := images.WriteLayout(*out, built); err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("Wrote %d images to %s\n", len(built), *out)
}
