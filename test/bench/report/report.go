// Package report writes benchmark results into docs/benchmarks.md: each
// benchmark owns one section between markers and replaces only that
// section, so benchmarks run separately do not erase each other's results.
package report

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hypershift-le/hypershift/test/testenv"
)

// File is docs/benchmarks.md under the repository root.
func File() (string, error) {
	root, err := testenv.RepositoryRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "docs", "benchmarks.md"), nil
}

const header = `# Benchmarks

Each section below is written by the command it names, on one real kube-apiserver
and etcd (built from Go modules, as the tests use). Re-running a command replaces
only its own section. Figures depend on the machine; the ratios against the anchors
measured in the same run are what carry over.
`

// Write replaces the section called name of File with body, and returns
// File's path.
func Write(name, body string) (string, error) {
	path, err := File()
	if err != nil {
		return "", err
	}
	return path, UpdateSection(path, name, body)
}

// UpdateSection replaces the section called name in path (creating the file
// and the section when missing) with body.
func UpdateSection(path, name, body string) error {
	begin := fmt.Sprintf("<!-- BEGIN %s -->", name)
	end := fmt.Sprintf("<!-- END %s -->", name)
	section := begin + "\n" + strings.TrimSpace(body) + "\n" + end
	old, err := os.ReadFile(path)
	switch {
	case os.IsNotExist(err):
		old = []byte(header)
	case err != nil:
		return fmt.Errorf("failed to read %s: %w", path, err)
	}
	text := string(old)
	i, j := strings.Index(text, begin), strings.Index(text, end)
	if i >= 0 && j > i {
		text = text[:i] + section + text[j+len(end):]
	} else {
		text = strings.TrimRight(text, "\n") + "\n\n" + section + "\n"
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(text), 0o644)
}

// ReadSection returns the body of the section called name in path, as
// UpdateSection last wrote it; "" when the file or the section is missing.
func ReadSection(path, name string) (string, error) {
	text, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("failed to read %s: %w", path, err)
	}
	begin := fmt.Sprintf("<!-- BEGIN %s -->", name)
	end := fmt.Sprintf("<!-- END %s -->", name)
	s := string(text)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		return "", nil
	}
	return strings.TrimSpace(s[i+len(begin) : j]), nil
}
