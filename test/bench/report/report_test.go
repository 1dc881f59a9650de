package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestUpdateSection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "docs", "benchmarks.md")
	if err := UpdateSection(path, "a", "first a"); err != nil {
		t.Fatal(err)
	}
	if err := UpdateSection(path, "b", "only b"); err != nil {
		t.Fatal(err)
	}
	if err := UpdateSection(path, "a", "second a\n"); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(got)
	switch {
	case !strings.HasPrefix(text, "# Benchmarks"):
		t.Errorf("no header:\n%s", text)
	case strings.Contains(text, "first a") || !strings.Contains(text, "second a") || !strings.Contains(text, "only b"):
		t.Errorf("sections not replaced in place:\n%s", text)
	case strings.Index(text, "second a") > strings.Index(text, "only b"):
		t.Errorf("section a moved:\n%s", text)
	}
	for name, want := range map[string]string{"a": "second a", "b": "only b", "c": ""} {
		if got, err := ReadSection(path, name); err != nil || got != want {
			t.Errorf("ReadSection(%q) = %q, %v; want %q", name, got, err, want)
		}
	}
	if got, err := ReadSection(filepath.Join(t.TempDir(), "missing.md"), "a"); err != nil || got != "" {
		t.Errorf("ReadSection of a missing file = %q, %v; want nothing", got, err)
	}
}
