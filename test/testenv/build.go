package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
