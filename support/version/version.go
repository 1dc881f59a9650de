// Package version holds the build's version, set at link time, for every
// binary the project ships.
package version

import (
	"fmt"
	"runtime"
)

// These are set with -ldflags "-X" by the Makefile and the Dockerfile.
var (
	// Version is the project's version, e.g. v0.1.0 or a git describe string.
	Version = "v0.0.0-dev"
	// Commit is the git commit the binary was built from.
	Commit = "unknown"
)

// String returns a one-line description of the build.
func String() string {
	return fmt.Sprintf("%s (commit %s, %s, %s/%s)", Version, Commit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
