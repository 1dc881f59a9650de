// Package images builds the project's container images without a container
// engine, from binaries already built into bin/: the product image (the
// Dockerfile's layout and user; a test reads the Dockerfile so that the two
// cannot drift), the images a release payload names for the hosted control
// plane's components, and the pause image a node's pod sandboxes run. Each
// image is one uncompressed layer on no base image, with fixed timestamps,
// so that the same binaries always give the same digest.
package images

import (
	"archive/tar"
	"bufio"
	"bytes"
	"cmp"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// NonRoot is the user every image runs as, distroless's nonroot: the
// control plane's pods ask for runAsNonRoot without naming a user, so the
// image must name a numeric one.
const NonRoot = "65532:65532"

// Spec is what one image holds.
type Spec struct {
	// Programs are binaries of the bin directory, each at /usr/bin/<name>.
	Programs []string
	// HostPrograms are programs of this machine's packages, with the
	// libraries they run on (see HostProgram).
	HostPrograms []HostProgram
	// Entrypoint is what a container runs when it gives no command.
	Entrypoint []string
	// User is the user the image runs as; NonRoot when empty.
	User string
	// Files are further files, by their path in the image (without the
	// leading /), each readable by all.
	Files map[string]string
}

// Product is the image of the Dockerfile: every binary the project ships,
// running the hypershift-operator by default.
var Product = Spec{
	Programs:   []string{"hypershift", "hypershift-operator", "control-plane-operator"},
	Entrypoint: []string{"/usr/bin/hypershift-operator"},
}

// Payload are the images of a release payload, by their tag in it
// (image-references), as OpenShift's images hold them: etcd runs etcd, the
// hyperkube image holds the Kubernetes control-plane components (the
// control-plane-operator runs them by path), hypershift is the product;
// coredns and kube-proxy are what the control plane runs on the hosted
// cluster's nodes; cluster-api runs the machines of NodePools whose
// machines the management cluster runs, machine is such a machine (the
// node image, as OpenShift's payload names its operating system's), pod
// is the pause image its pod sandboxes run (OpenShift's name for it), and
// pod-network routes pods between such machines.
var Payload = map[string]Spec{
	"etcd":        {Programs: []string{"etcd"}, Entrypoint: []string{"/usr/bin/etcd"}},
	"hyperkube":   {Programs: []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"}},
	"hypershift":  Product,
	"coredns":     {Programs: []string{"coredns"}, Entrypoint: []string{"/usr/bin/coredns"}},
	"kube-proxy":  KubeProxy,
	"cluster-api": {Programs: []string{"cluster-api"}, Entrypoint: []string{"/usr/bin/cluster-api"}},
	"machine":     Machine,
	"pod":         Pause,
	"pod-network": PodNetwork,
}

// PodNetwork is the image of the pod network's DaemonSet on machines of
// platform Pod: hypershift-machine pod-network, and the iptables it
// masquerades with. It runs as root, privileged, in the machine's network.
var PodNetwork = Spec{
	Programs:     []string{"hypershift-machine"},
	HostPrograms: []HostProgram{IPTables},
	Entrypoint:   []string{"/usr/bin/hypershift-machine", "pod-network"},
	User:         "0:0",
}

// KubeProxy is the image of the hosted clusters' kube-proxy: kube-proxy
// and the iptables it programs the node's Service rules with.
var KubeProxy = Spec{Programs: []string{"kube-proxy"}, HostPrograms: []HostProgram{IPTables}, Entrypoint: []string{"/usr/bin/kube-proxy"}}

// Machine is the image of a machine of a NodePool of platform Pod: what a
// node's operating system holds for Kubernetes (the kubelet, containerd and
// runc, the CNI plugins, iptables and mount), and the machine's init,
// hypershift-machine, which runs them. It runs as root: a machine is a
// privileged Pod.
var Machine = Spec{
	Programs: []string{"hypershift-machine", "kubelet"},
	HostPrograms: []HostProgram{
		{Path: "/usr/bin/containerd"}, {Path: "/usr/bin/containerd-shim-runc-v2"}, {Path: "/usr/sbin/runc"},
		{Path: "/usr/lib/cni/bridge"}, {Path: "/usr/lib/cni/host-local"}, {Path: "/usr/lib/cni/loopback"}, {Path: "/usr/lib/cni/portmap"},
		IPTables, {Path: "/usr/bin/mount"}, {Path: "/usr/bin/umount"},
	},
	Entrypoint: []string{"/usr/bin/hypershift-machine", "run"},
	User:       "0:0",
	Files: map[string]string{
		// What a Node's status.nodeInfo.osImage shows.
		"etc/os-release": "NAME=\"Hypershift machine\"\nID=hypershift-machine\nPRETTY_NAME=\"Hypershift machine (containerd, runc, kubelet)\"\n",
	},
}

// Pause is the image a node's pod sandboxes run.
var Pause = Spec{Programs: []string{"pause"}, Entrypoint: []string{"/usr/bin/pause"}}

// epoch is every file's and the image's time: the same inputs give the
// same digest.
var epoch = time.Unix(0, 0).UTC()

// Build returns the image spec describes, with the programs read from
// binDir (static binaries: there is no C library in the image) and labels
// in its config. Its layer is held in memory (an image's size once).
func Build(spec Spec, binDir string, labels map[string]string) (v1.Image, error) {
	size, err := layerSize(spec, binDir)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.Grow(int(size))
	if err := rootfs(&buf, spec, binDir); err != nil {
		return nil, err
	}
	return withConfig(static.NewLayer(buf.Bytes(), types.OCIUncompressedLayer), spec, labels)
}

// BuildInto is Build with the layer written to blobDir/sha256/<hex> (the
// layout of OCI and registry blob stores) and read from that file: the
// process holds none of the layer, and a registry serving blobDir has the
// blob without an upload. The digests are Build's.
func BuildInto(spec Spec, binDir string, labels map[string]string, blobDir string) (v1.Image, error) {
	if err := os.MkdirAll(filepath.Join(blobDir, "sha256"), 0o700); err != nil {
		return nil, fmt.Errorf("failed to create the blob directory: %w", err)
	}
	tmp, err := os.CreateTemp(blobDir, "layer-*")
	if err != nil {
		return nil, fmt.Errorf("failed to create the layer's file: %w", err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	hash := sha256.New()
	counted := &countingWriter{w: io.MultiWriter(tmp, hash)}
	buffered := bufio.NewWriterSize(counted, 1<<20)
	err = rootfs(buffered, spec, binDir)
	if err == nil {
		err = buffered.Flush()
	}
	if err = errors.Join(err, tmp.Close()); err != nil {
		return nil, fmt.Errorf("failed to write the layer's file: %w", err)
	}
	digest := v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(hash.Sum(nil))}
	path := filepath.Join(blobDir, digest.Algorithm, digest.Hex)
	if err := os.Rename(tmp.Name(), path); err != nil {
		return nil, fmt.Errorf("failed to store the layer: %w", err)
	}
	return withConfig(&fileLayer{path: path, digest: digest, size: counted.n}, spec, labels)
}

// withConfig is the image of the one layer, with spec's config and labels.
func withConfig(layer v1.Layer, spec Spec, labels map[string]string) (v1.Image, error) {
	img, err := mutate.Append(mutate.MediaType(empty.Image, types.OCIManifestSchema1), mutate.Addendum{
		Layer:     layer,
		History:   v1.History{CreatedBy: "hack/images", Created: v1.Time{Time: epoch}},
		MediaType: types.OCIUncompressedLayer,
	})
	if err != nil {
		return nil, fmt.Errorf("failed to add the layer: %w", err)
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("failed to read the config: %w", err)
	}
	cfg = cfg.DeepCopy()
	cfg.Architecture, cfg.OS, cfg.Created = "amd64", "linux", v1.Time{Time: epoch}
	cfg.Config.User = cmp.Or(spec.User, NonRoot)
	cfg.Config.Entrypoint = slices.Clone(spec.Entrypoint)
	cfg.Config.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"}
	cfg.Config.WorkingDir = "/"
	cfg.Config.Labels = labels
	return mutate.ConfigFile(img, cfg)
}

// layerSize bounds the size of spec's layer from its programs' sizes, so a
// buffer can be sized once.
func layerSize(spec Spec, binDir string) (int64, error) {
	size := int64(1 << 20) // headers, padding, the small files
	for _, program := range spec.Programs {
		info, err := os.Stat(filepath.Join(binDir, program))
		if err != nil {
			return 0, fmt.Errorf("failed to read the image's program %s (build it into %s first): %w", program, binDir, err)
		}
		size += info.Size() + 2048
	}
	for _, p := range spec.HostPrograms {
		if info, err := os.Stat(p.Path); err == nil {
			size += info.Size() + 1<<20 // the program and its share of the libraries
		}
	}
	return size, nil
}

// rootfs writes the image's one layer to out: the programs under
// /usr/bin, the nonroot user's passwd and group entries and home, /tmp,
// and the host's CA bundle (what distroless/static provides), all owned by
// root but home. The programs are copied from their files, not read whole.
func rootfs(out io.Writer, spec Spec, binDir string) error {
	files, links := map[string][]byte{}, map[string]string{}
	if len(spec.HostPrograms) > 0 {
		var err error
		if files, links, err = hostFiles(spec.HostPrograms); err != nil {
			return err
		}
	}
	w := &layerWriter{tw: tar.NewWriter(out)}
	for _, d := range []string{"etc/", "etc/ssl/", "etc/ssl/certs/", "usr/", "usr/bin/", "home/"} {
		w.dir(d, 0o755, 0)
	}
	w.dir("tmp/", 0o1777, 0)
	w.dir("home/nonroot/", 0o700, 65532)
	w.file("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"))
	w.file("etc/group", 0o644, []byte("root:x:0:\nnonroot:x:65532:\n"))
	if certs, err := os.ReadFile("/etc/ssl/certs/ca-certificates.crt"); err == nil {
		w.file("etc/ssl/certs/ca-certificates.crt", 0o644, certs)
	}
	for _, program := range spec.Programs {
		path := filepath.Join(binDir, program)
		if err := staticallyLinked(path); err != nil {
			return err
		}
		if err := w.copyFile("usr/bin/"+program, 0o755, path); err != nil {
			return fmt.Errorf("failed to read the image's program %s (build it into %s first): %w", program, binDir, err)
		}
	}
	modes := map[string]int64{}
	for name, text := range spec.Files {
		files[name], modes[name] = []byte(text), 0o644
	}
	dirs := map[string]bool{"etc/": true, "etc/ssl/": true, "etc/ssl/certs/": true, "usr/": true, "usr/bin/": true, "home/": true}
	for _, name := range append(sortedKeys(files), sortedKeys(links)...) {
		var parents []string
		for d := filepath.Dir(name); d != "." && !dirs[d+"/"]; d = filepath.Dir(d) {
			parents = append(parents, d+"/")
			dirs[d+"/"] = true
		}
		for _, d := range slices.Backward(parents) {
			w.dir(d, 0o755, 0)
		}
	}
	for _, name := range sortedKeys(files) {
		w.file(name, cmp.Or(modes[name], 0o755), files[name])
	}
	for _, name := range sortedKeys(links) {
		w.symlink(name, links[name])
	}
	if err := errors.Join(w.err, w.tw.Close()); err != nil {
		return fmt.Errorf("failed to write the layer: %w", err)
	}
	return nil
}

// layerWriter writes a layer's entries with the fixed time, keeping the
// first error.
type layerWriter struct {
	tw  *tar.Writer
	err error
}

func (w *layerWriter) dir(name string, mode int64, owner int) {
	if w.err == nil {
		w.err = w.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: mode, Uid: owner, Gid: owner, ModTime: epoch, Format: tar.FormatPAX})
	}
}

func (w *layerWriter) symlink(name, target string) {
	if w.err == nil {
		w.err = w.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target, Mode: 0o777, ModTime: epoch, Format: tar.FormatPAX})
	}
}

// copyFile writes the file at path as name, copied from the file.
func (w *layerWriter) copyFile(name string, mode int64, path string) error {
	if w.err != nil {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	w.err = w.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: info.Size(), ModTime: epoch, Format: tar.FormatPAX})
	if w.err == nil {
		_, w.err = io.Copy(w.tw, f)
	}
	return nil
}

func (w *layerWriter) file(name string, mode int64, data []byte) {
	if w.err == nil {
		w.err = w.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: epoch, Format: tar.FormatPAX})
	}
	if w.err == nil {
		_, w.err = w.tw.Write(data)
	}
}

// staticallyLinked refuses a dynamically linked program: the image has no C library
// and no dynamic loader for it.
func staticallyLinked(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%s is not an ELF program: %w", path, err)
	}
	defer func() { _ = f.Close() }()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked, and the image has no C library or dynamic loader for it: build it with CGO_ENABLED=0", path)
		}
	}
	return nil
}

// All are the images `make image` builds, by repository: the product, the
// payload's component images and the pause image.
func All() map[string]Spec {
	all := map[string]Spec{"pause": Pause}
	for tag, spec := range Payload {
		all[tag] = spec
	}
	return all
}

// fileLayer is an uncompressed layer read from its file.
type fileLayer struct {
	path   string
	digest v1.Hash
	size   int64
}

func (l *fileLayer) Digest() (v1.Hash, error)             { return l.digest, nil }
func (l *fileLayer) DiffID() (v1.Hash, error)             { return l.digest, nil }
func (l *fileLayer) Compressed() (io.ReadCloser, error)   { return os.Open(l.path) }
func (l *fileLayer) Uncompressed() (io.ReadCloser, error) { return os.Open(l.path) }
func (l *fileLayer) Size() (int64, error)                 { return l.size, nil }
func (l *fileLayer) MediaType() (types.MediaType, error)  { return types.OCIUncompressedLayer, nil }

// countingWriter counts what goes through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
