package images

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// TestProductIsTheDockerfilesImage reads the Dockerfile: its final stage
// copies the same programs to /usr/bin, runs as the same user and has the
// same entrypoint as Product, so that the image built without an engine
// and the Dockerfile's cannot drift apart.
func TestProductIsTheDockerfilesImage(t *testing.T) {
	dockerfile, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	text := string(dockerfile)
	final := text[strings.LastIndex(text, "\nFROM "):]
	copyLine := regexp.MustCompile(`(?m)^COPY --from=builder (.+) /usr/bin/$`).FindStringSubmatch(final)
	if copyLine == nil {
		t.Fatalf("the Dockerfile's final stage has no COPY --from=builder ... /usr/bin/:\n%s", final)
	}
	var programs []string
	for _, source := range strings.Fields(copyLine[1]) {
		programs = append(programs, filepath.Base(source))
	}
	if diff := cmp.Diff(Product.Programs, programs); diff != "" {
		t.Errorf("programs (-images.Product +Dockerfile):\n%s", diff)
	}
	if user := regexp.MustCompile(`(?m)^USER (\S+)$`).FindStringSubmatch(final); user == nil || user[1] != NonRoot {
		t.Errorf("the Dockerfile's USER is %v, the image's %s", user, NonRoot)
	}
	entrypoint := `ENTRYPOINT ["` + strings.Join(Product.Entrypoint, `", "`) + `"]`
	if !strings.Contains(final, "\n"+entrypoint+"\n") {
		t.Errorf("the Dockerfile's final stage has no %s", entrypoint)
	}
}

// TestBuild builds an image of the pause program (built static here): it
// holds the program, the nonroot user and /tmp, runs as that user, and two
// builds of the same binary have one digest. A dynamically linked program
// is refused with what to do.
func TestBuild(t *testing.T) {
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "pause"), "./pause")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	img, err := Build(Pause, bin, map[string]string{"org.opencontainers.image.version": "v1"})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Config.User != NonRoot || !slices.Equal(cfg.Config.Entrypoint, []string{"/usr/bin/pause"}) || cfg.Config.Labels["org.opencontainers.image.version"] != "v1" {
		t.Errorf("config = %+v", cfg.Config)
	}
	files := map[string]*tar.Header{}
	r := tar.NewReader(mutate.Extract(img))
	for {
		h, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = h
	}
	for name, want := range map[string]struct {
		mode int64
		uid  int
	}{
		"usr/bin/pause": {0o755, 0}, "etc/passwd": {0o644, 0}, "etc/group": {0o644, 0}, "tmp": {0o1777, 0}, "home/nonroot": {0o700, 65532},
	} {
		h := files[name]
		if h == nil || h.Mode != want.mode || h.Uid != want.uid {
			t.Errorf("%s = %+v, want mode %o owned by %d", name, h, want.mode, want.uid)
		}
	}
	for name := range files {
		if strings.HasPrefix(name, "bin/") || strings.HasSuffix(name, "/sh") {
			t.Errorf("the image has a shell or /bin: %s", name)
		}
	}

	again, err := Build(Pause, bin, map[string]string{"org.opencontainers.image.version": "v1"})
	if err != nil {
		t.Fatal(err)
	}
	first, _ := img.Digest()
	second, _ := again.Digest()
	if first != second {
		t.Errorf("two builds of one binary: digests %s and %s", first, second)
	}

	blobs := t.TempDir()
	onDisk, err := BuildInto(Pause, bin, map[string]string{"org.opencontainers.image.version": "v1"}, blobs)
	if err != nil {
		t.Fatal(err)
	}
	if third, _ := onDisk.Digest(); third != first {
		t.Errorf("built into a blob directory: digest %s, want Build's %s", third, first)
	}
	layers, err := onDisk.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: %v, %v", layers, err)
	}
	layer, _ := layers[0].Digest()
	if _, err := os.Stat(filepath.Join(blobs, layer.Algorithm, layer.Hex)); err != nil {
		t.Errorf("the layer is not in the blob directory: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(blobs, "layer-*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}

	dynamic := t.TempDir()
	host, err := exec.LookPath("ls")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(host)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dynamic, "pause"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Build(Pause, dynamic, nil); err == nil || !strings.Contains(err.Error(), "is dynamically linked") || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Errorf("a dynamically linked program: got %v", err)
	}
}
