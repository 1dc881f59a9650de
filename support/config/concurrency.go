package config

import "fmt"

const (
	// DefaultMaxConcurrentReconciles is how many HostedClusters the
	// hypershift-operator reconciles at once by default. A pass mostly
	// waits on the API server (reads from the cache, a dozen requests on a
	// first pass, a fence probe), so one worker leaves the operator idle
	// while a fleet waits; `make bench-scale` measures the convergence of
	// 1,000 new HostedClusters with this value.
	DefaultMaxConcurrentReconciles = 10
	// MaxMaxConcurrentReconciles bounds --max-concurrent-reconciles: each
	// worker is a goroutine and, on a first pass, a dozen requests in
	// flight; past this the API server's fairness, not the operator,
	// decides how fast a fleet converges.
	MaxMaxConcurrentReconciles = 1000
)

// ValidateMaxConcurrentReconciles refuses a worker count the
// hypershift-operator cannot run with, in the words of its flag.
func ValidateMaxConcurrentReconciles(n int) error {
	if n < 1 || n > MaxMaxConcurrentReconciles {
		return fmt.Errorf("--max-concurrent-reconciles must be from 1 to %d, got %d", MaxMaxConcurrentReconciles, n)
	}
	return nil
}
