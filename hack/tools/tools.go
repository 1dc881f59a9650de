//go:build tools

// Package tools records the tool programs this module pins, so that
// `go mod tidy` keeps their versions in go.sum.
package tools

import (
	_ "sigs.k8s.io/controller-tools/cmd/controller-gen"
)
