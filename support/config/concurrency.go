package config

import "fmt"

const (
	// DefaultMaxConcurrentReconciles is how many HostedClusters the
	// hypershift-operator reconciles at once by default. A pass mostly
	// waits on the API server (reads from the cache, a dozen requests on a
	// first pass, a fence probe), so one worker leaves the operator idle
	// while a fleet waits. `make bench-scale` chose it: 1,000 new
	// HostedClusters on a 2-CPU machine had every object in place after
	// 66.6 s with 10 workers (mean of 2 runs), 57.4 s with 25 (4 runs)
	// and 57.2 s with 50 (1 run), for the same requests per
	// HostedCluster: past about 25 the management API server's CPU, not
	// the operator, sets the pace, and each worker costs memory (the
	// operator's peak RSS 161, 170 and 184 MiB).
	DefaultMaxConcurrentReconciles = 25
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

// MaxShards bounds --shards: every shard is a Lease each replica follows
// (a watch) and a controller on the replica that holds it.
const MaxShards = 64

// ValidateShards refuses a shard count the hypershift-operator cannot run
// with, in the words of its flag.
func ValidateShards(n int) error {
	if n < 1 || n > MaxShards {
		return fmt.Errorf("--shards must be from 1 to %d, got %d", MaxShards, n)
	}
	return nil
}
