// The hostedclustersreplicas part: the hostedclusters part's 1,000
// HostedClusters converged by one hypershift-operator replica (the anchor),
// then by 2 and by 4 replicas splitting 4 shards (--shards), each run on a
// fresh API server, with the ratios against the anchor.

package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hypershift-le/hypershift/test/testenv"
)

// replicaRuns are the part's runs, the anchor first.
var replicaRuns = []struct{ replicas, shards int }{{1, 1}, {2, 4}, {4, 4}}

// replicasQuiet is each run's quiet window: the runs compare convergence;
// the steady state is the hostedclusters part's.
const replicasQuiet = 30 * time.Second

// hostedClustersReplicas runs the part; the first run uses env, the others
// an API server and etcd of their own, started and stopped here.
func hostedClustersReplicas(ctx context.Context, env *testenv.Env) (string, error) {
	var results []*hcResult
	var failed error
	for i, run := range replicaRuns {
		runEnv := env
		if i > 0 {
			startCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
			fresh, err := testenv.Start(startCtx, testenv.Options{AuditLog: true})
			cancel()
			if err != nil {
				failed = fmt.Errorf("the API server of the run with %d replicas did not start: %w", run.replicas, err)
				break
			}
			runEnv = fresh
		}
		fmt.Printf("\n--- %d replica(s), %d shard(s)\n", run.replicas, run.shards)
		o := hcFlags
		o.replicas, o.shards, o.failover, o.quiet = run.replicas, run.shards, false, replicasQuiet
		_, res, err := hostedClustersWith(ctx, runEnv, o, "")
		if i > 0 {
			if stopErr := runEnv.Stop(); stopErr != nil {
				fmt.Printf("failed to stop the run's API server and etcd: %v\n", stopErr)
			}
		}
		if err != nil {
			failed = fmt.Errorf("the run with %d replicas and %d shards: %w", run.replicas, run.shards, err)
			break
		}
		results = append(results, res)
	}
	if len(results) == 0 {
		return "", failed
	}
	markdown := replicasMarkdown(results)
	fmt.Printf("\n%s", markdown)
	return markdown, failed
}

// replicasMarkdown sets each run's headline figures beside the anchor's
// (results[0]).
func replicasMarkdown(results []*hcResult) string {
	type figure struct {
		name  string
		value func(*hcResult) float64
		unit  string
	}
	since := func(pick func(*hcRun) time.Time) func(*hcResult) float64 {
		return func(res *hcResult) float64 { return pick(res.run).Sub(res.run.firstCreate).Seconds() }
	}
	figures := []figure{
		{"every HostedCluster complete (objects)", since(func(r *hcRun) time.Time { return r.allObjects }), "s"},
		{"every status complete but the silent CPO Lease", since(func(r *hcRun) time.Time { return r.settledButSilence }), "s"},
		{"create to complete, p50", func(res *hcResult) float64 { return res.percentile(0.5).Seconds() }, "s"},
		{"requests per HostedCluster while converging (every replica)", func(res *hcResult) float64 { return float64(res.converging.total) / res.n() }, ""},
		{"hypershift-operator CPU while converging (every replica)", func(res *hcResult) float64 {
			return (res.run.cpuAtQuietStart - res.run.cpuAtFirstCreate).Seconds()
		}, "s"},
		{"management kube-apiserver CPU while converging", func(res *hcResult) float64 {
			return (res.run.apiCPUAtQuietStart - res.run.apiCPUAtFirstCreate).Seconds()
		}, "s"},
		{"largest replica's peak RSS (VmHWM)", func(res *hcResult) float64 { return float64(res.hwm) / (1 << 20) }, "MiB"},
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s HostedClusters as in the hostedclusters part, created the same way, converged by one hypershift-operator replica (the anchor: `--shards=1`, today's default), "+
		"then by replicas splitting shards (`--shards`, a Lease each, assigned in turn to the live replicas), each run on a fresh API server and etcd; "+
		"no failover run, a %s quiet window. Ratios against the anchor, in the same process (below 1: lower than the anchor).\n\n",
		thousands(len(results[0].run.clusters)), replicasQuiet)
	b.WriteString("| measure |")
	for _, res := range results {
		fmt.Fprintf(&b, " %d replica(s), %d shard(s) |", res.run.replicas, res.run.shards)
	}
	b.WriteString("\n|---|")
	for range results {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, f := range figures {
		fmt.Fprintf(&b, "| %s |", f.name)
		anchor := f.value(results[0])
		for i, res := range results {
			v := f.value(res)
			if i == 0 {
				fmt.Fprintf(&b, " %.1f %s |", v, f.unit)
				continue
			}
			fmt.Fprintf(&b, " %.1f %s (%.2fx) |", v, f.unit, v/max(anchor, 1e-9))
		}
		b.WriteString("\n")
	}
	return b.String()
}
