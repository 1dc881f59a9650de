package localcluster

import (
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/hypershift-le/hypershift/test/nodeagent"
)

// image is what a payload image holds: programs under /usr/bin, each a
// binary of the same name in BinDir, and the program it runs when a
// container gives no command.
type image struct {
	programs   []string
	entrypoint string
}

// payloadImages maps a release payload's tags to their contents, as
// OpenShift's images hold them: the etcd image runs etcd; the hyperkube
// image holds the Kubernetes components, run by name or as
// `hyperkube <component>`; the hypershift image holds this project's
// binaries.
var payloadImages = map[string]image{
	"etcd":       {programs: []string{"etcd"}, entrypoint: "etcd"},
	"hyperkube":  {programs: []string{"hyperkube", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}},
	"hypershift": {programs: []string{"hypershift", "hypershift-operator", "control-plane-operator"}},
}

// resolve maps a container to a local binary by its image's payload tag
// and its command, the way the image would run it. An image that is none
// of the payload's keeps the container waiting with ErrImagePull.
func (c *Cluster) resolve(_ *corev1.Pod, container *corev1.Container, command, args []string) (string, []string, error) {
	if binary, ok := c.opts.ImageBinaries[container.Image]; ok {
		return binary, args, nil
	}
	tag, ok := c.Registry.Tag(container.Image)
	contents, known := payloadImages[tag]
	if !ok || !known {
		return "", nil, fmt.Errorf("%w: %s is not an image of the local registry's release payloads (%s)",
			nodeagent.ErrImagePull, container.Image, strings.Join(payloadTags(), ", "))
	}
	argv := append(append([]string{}, command...), args...)
	if len(command) == 0 {
		if contents.entrypoint == "" {
			return "", nil, fmt.Errorf("image %s (%s) has no entrypoint: the container must give a command", container.Image, tag)
		}
		argv = append([]string{contents.entrypoint}, args...)
	}
	program, err := programOf(argv[0], contents)
	if err != nil {
		return "", nil, fmt.Errorf("image %s (%s): %w", container.Image, tag, err)
	}
	argv = argv[1:]
	if program == "hyperkube" {
		// OpenShift's hyperkube runs the component its first argument names.
		if len(argv) == 0 {
			return "", nil, fmt.Errorf("image %s: hyperkube needs a component to run", container.Image)
		}
		if program, err = programOf(argv[0], contents); err != nil || program == "hyperkube" {
			return "", nil, fmt.Errorf("image %s: hyperkube has no component %q", container.Image, argv[0])
		}
		argv = argv[1:]
	}
	return filepath.Join(c.opts.BinDir, program), argv, nil
}

// programOf returns the program a command names in an image: a bare name,
// or a path under /usr/bin or /bin.
func programOf(name string, contents image) (string, error) {
	base := path.Base(name)
	dir := path.Dir(name)
	if strings.Contains(name, "/") && dir != "/usr/bin" && dir != "/bin" && dir != "/usr/local/bin" {
		return "", fmt.Errorf("exec: %q: no such file or directory", name)
	}
	if !slices.Contains(contents.programs, base) {
		return "", fmt.Errorf("exec: %q: executable file not found in $PATH", name)
	}
	return base, nil
}

func payloadTags() []string {
	tags := make([]string, 0, len(payloadImages))
	for tag := range payloadImages {
		tags = append(tags, tag)
	}
	slices.Sort(tags)
	return tags
}
