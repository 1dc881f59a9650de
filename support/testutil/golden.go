// Package testutil holds helpers shared by the project's unit tests: golden
// files for rendered objects.
package testutil

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

// UpdateEnv names the environment variable that rewrites golden files.
const UpdateEnv = "UPDATE"

// CompareWithGolden renders obj as YAML and compares it with
// testdata/<name>.yaml next to the test. With UPDATE=true it writes the file
// instead; the test still fails when the file was missing, so a forgotten
// golden file is never silently created in CI.
func CompareWithGolden(t *testing.T, name string, obj any) {
	t.Helper()
	got, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatalf("failed to render %s as YAML: %v", name, err)
	}
	CompareBytesWithGolden(t, name+".yaml", got)
}

// CompareBytesWithGolden compares got with the file testdata/<file> next to
// the test, as CompareWithGolden does: for files that are not objects
// (configuration files, command lines).
func CompareBytesWithGolden(t *testing.T, file string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", file)
	if strings.EqualFold(os.Getenv(UpdateEnv), "true") {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("failed to read golden file (run the test with %s=true to create it): %v", UpdateEnv, err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s differs from %s (run with %s=true to accept; -golden +got):\n%s", file, path, UpdateEnv, cmp.Diff(string(want), string(got)))
	}
}
