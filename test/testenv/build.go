package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// BuildBinary builds the main package pkg of this repository into a
// temporary directory, for tests that run it as a real process. It returns
// the binary's path and a function that removes it.
func BuildBinary(pkg string, tags ...string) (string, func(), error) {
	dir, err := os.MkdirTemp("", "testbin-")
	if err != nil {
		return "", nil, fmt.Errorf("failed to create a temporary directory: %w", err)
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	binary := filepath.Join(dir, filepath.Base(pkg))
	args := []string{"build", "-o", binary}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	build := exec.Command("go", append(args, pkg)...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("failed to build %s: %w", pkg, err)
	}
	return binary, cleanup, nil
}

// MainWithBinary is Main for tests that run pkg as a real process: it
// builds pkg into *binary first, and removes it after the tests.
func MainWithBinary(m *testing.M, pkg string, binary *string, opts Options, env **Env) int {
	path, cleanup, err := BuildBinary(pkg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %v\n", err)
		return 1
	}
	defer cleanup()
	*binary = path
	return Main(m, opts, env)
}
