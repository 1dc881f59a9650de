package testenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// binaries the test control plane needs in its assets directory.
var binaries = []string{"etcd", "kube-apiserver"}

// BinaryAssetsDirectory returns the directory holding etcd and
// kube-apiserver: $KUBEBUILDER_ASSETS when set, else the repository's bin/.
// It fails with the command that builds them when one is missing.
func BinaryAssetsDirectory() (string, error) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		root, err := RepositoryRoot()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(root, "bin")
	}
	for _, name := range binaries {
		path := filepath.Join(dir, name)
		if _, err := os.Stat(path); err != nil {
			return "", fmt.Errorf("%s is missing (%w): run `make testbin` to build etcd and kube-apiserver from Go modules, or point KUBEBUILDER_ASSETS at a directory holding them", path, err)
		}
	}
	return dir, nil
}

// RepositoryRoot returns the nearest directory, from the working directory
// up, that holds go.mod and the api/ tree: the root of this repository.
func RepositoryRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("failed to get the working directory: %w", err)
	}
	for {
		if isRoot(dir) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("failed to find the repository root (a directory with go.mod and api/) above the working directory")
		}
		dir = parent
	}
}

func isRoot(dir string) bool {
	for _, name := range []string{"go.mod", "api"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return false
		}
	}
	return true
}
