// Command election measures the Lease traffic, graceful handover and crash
// takeover of the project's leader election (support/leaderelection)
// against client-go's LeaderElector with three anchor timings, on one real
// kube-apiserver and etcd (test/testenv, with its audit log).
//
// # What it runs
//
// Six configurations side by side, in one run, three candidates each:
//
//   - client-go 15/10/2: client-go's LeaderElector with a LeaseLock and
//     its defaults (lease duration 15s, renew deadline 10s, retry 2s);
//   - HyperShift 60/40/15: the same elector with HyperShift's timings;
//   - library-go 137/107/26: the same elector with library-go's timings;
//   - ours 15/10/2 renew 6.7s: ours at client-go's lease duration;
//   - ours 300/225/2 renew 150s: ours with a lease five times the
//     default, compared with the default on every takeover (whether the
//     parent lets the lease grow without a slower takeover);
//   - ours 60/45/2 renew 30s: support/leaderelection with
//     config.DefaultControlPlaneOperatorTimings.
//
// Every candidate is its own API user, so the audit log tells its requests
// apart. Per configuration, in namespaces of their own and all at once:
//
//   - a steady group campaigns for -window after a settling time; its Lease
//     requests over the window are counted from the audit log: the
//     holder's successful writes (creates and updates), the other
//     candidates' reads (gets and lists) and, apart, their watch requests
//     (long-lived streams, not polls);
//   - -samples graceful samples: once a leader leads, it runs for a random
//     part of its renew period, then its context is cancelled with release
//     on (client-go's ReleaseOnCancel, our NoRelease false); the handover
//     is the time from the cancel to a standby's "started leading";
//   - -samples crash samples: the same, with release off (the Lease stays
//     held, as when the process dies); the takeover is the time from the
//     cancel to a standby's "started leading";
//   - -samples "leader pod force-deleted", -samples "leader pod failed"
//     and -samples "leader in back-off" samples: crashes whose pod then
//     goes, or whose container the kubelet then reports exited and
//     waiting to restart (CrashLoopBackOff, the pod Running). Their
//     namespace is the
//     control-plane namespace of a HostedCluster whose fence is in force,
//     every candidate has a control-plane-operator pod named as its
//     identity, they campaign for the CPO Lease, and right after the
//     leader's stop its pod is force-deleted, reported Failed, or its
//     container reported in back-off. The hypershift-operator's lease
//     arbiter runs throughout, as an API user of its own bound to the
//     operator's ClusterRole, and releases the Lease of a gone pod, and
//     under the fence that of a container in back-off.
//
// For every namespace, the successful Lease writes of the audit log are
// replayed to check that never two candidates held the Lease at once: a
// candidate may take the Lease from another only after that one released
// it (or the parent did, only once the holder's pod began to go) or after
// its last write plus the lease duration.
//
// # Running it
//
//	make bench-election
//
// builds etcd and kube-apiserver first; it takes about as long as -window
// (5m) plus a minute, at least the 300s lease's crash takeover (up to
// 2.5 min of leading, then up to 5 min).
// While developing:
//
//	KUBEBUILDER_ASSETS=$PWD/bin go run ./test/bench/election -samples=1 -window=1m -report=false
//
// # Reading the results
//
// It prints a table and writes the "election" section of
// docs/benchmarks.md and the chart docs/election-timeline.svg. The table
// has one row per configuration: leader Lease writes per minute and Lease
// reads per minute of each follower in the steady window, the followers'
// watch requests, and the median and max of the handover and takeover
// samples. Then the ratios ours/anchor, the takeovers when the leader's
// pod is gone beside the crash takeover, and the goals at a 60s lease
// duration: leader at most 2 writes/min, followers no Lease reads,
// graceful handover within 1s, crash takeover within the lease duration
// plus 1s, and with the leader's pod force-deleted or failed, or its
// container in back-off, a takeover median within 2s and max within 3s;
// and the longer lease beside the default, takeover by takeover. The chart shows, per configuration, one crash sample and one
// graceful sample on a time axis from the leader's stop: each candidate's
// Lease requests (writes and reads as different marks) and who holds the
// Lease. The command exits non-zero when a sample fails, two holders
// overlap or our elector misses a goal. Every process it starts is stopped
// when it ends, on errors and on Ctrl-C too.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hypershift-le/hypershift/test/bench/report"
	"github.com/hypershift-le/hypershift/test/testenv"
)

var (
	samples     = flag.Int("samples", 5, "Graceful-handover and crash-takeover samples per configuration.")
	window      = flag.Duration("window", 5*time.Minute, "Steady window over which Lease traffic is counted.")
	settle      = flag.Duration("settle", 15*time.Second, "Time the steady groups campaign before the window starts.")
	writeReport = flag.Bool("report", true, "Write the results into docs/benchmarks.md and docs/election-timeline.svg.")
	timeout     = flag.Duration("timeout", 30*time.Minute, "Give up, stopping everything, after this long.")
)

const chartFile = "election-timeline.svg"

func main() { os.Exit(run()) }

func run() int {
	flag.Parse()
	if *samples < 1 || *window <= 0 {
		fmt.Fprintln(os.Stderr, "-samples must be at least 1 and -window positive")
		return 2
	}
	begun := time.Now()
	ctx, env, done, err := report.Setup(*timeout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %v\n", err)
		return 1
	}
	defer done()
	machine := report.Machine(env)
	fmt.Printf("machine: %s\n", machine)

	res, err := measure(ctx, env)
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %v\n", err)
		return 1
	}
	wall := time.Since(begun).Round(time.Second)
	markdown, failures := res.markdown(machine, report.CommandLine("make bench-election", "./test/bench/election"), wall)
	fmt.Printf("\n%s\n", markdown)
	fmt.Printf("wall time: %s\n", wall)
	if *writeReport {
		path, err := report.File()
		if err == nil {
			err = os.WriteFile(filepath.Join(filepath.Dir(path), chartFile), []byte(res.chart()), 0o644)
		}
		if err == nil {
			err = report.UpdateSection(path, "election", markdown)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "failed to write the report: %v\n", err)
			return 1
		}
		fmt.Printf("wrote section election of %s and %s\n", path, chartFile)
	} else {
		tmp := filepath.Join(os.TempDir(), chartFile)
		if err := os.WriteFile(tmp, []byte(res.chart()), 0o644); err == nil {
			fmt.Printf("wrote the chart to %s\n", tmp)
		}
	}
	for _, f := range failures {
		fmt.Fprintf(os.Stderr, "FAIL: %s\n", f)
	}
	if len(failures) > 0 {
		return 1
	}
	return 0
}

// results holds everything measured in one run.
type results struct {
	steady      map[string]*group // by configuration key
	samples     map[string][]*group
	windowStart time.Time
	windowEnd   time.Time
	requests    map[string][]request // by namespace
}

func measure(ctx context.Context, env *testenv.Env) (*results, error) {
	res := &results{steady: map[string]*group{}, samples: map[string][]*group{}}
	arbiterCtx, stopArbiter := context.WithCancel(ctx)
	arbiterDone, err := startArbiter(arbiterCtx, env)
	if err != nil {
		stopArbiter()
		return nil, err
	}
	defer func() {
		stopArbiter()
		if err := <-arbiterDone; err != nil {
			fmt.Fprintf(os.Stderr, "the lease arbiter stopped with an error: %v\n", err)
		}
	}()
	var all []*group
	for _, cfg := range configurations {
		g, err := newGroup(ctx, env, cfg, kindSteady, 0)
		if err != nil {
			return nil, err
		}
		res.steady[cfg.key] = g
		all = append(all, g)
		for i := range *samples {
			for _, kind := range sampleKinds {
				g, err := newGroup(ctx, env, cfg, kind, i)
				if err != nil {
					return nil, err
				}
				res.samples[cfg.key] = append(res.samples[cfg.key], g)
				all = append(all, g)
			}
		}
	}
	fmt.Printf("%d namespaces, %d candidates; starting them all\n", len(all), len(all)*candidates)

	start := time.Now()
	res.windowStart = start.Add(*settle)
	res.windowEnd = res.windowStart.Add(*window)
	var wg sync.WaitGroup
	errs := make([]error, len(all))
	for i, g := range all {
		wg.Go(func() {
			if g.kind == kindSteady {
				errs[i] = g.runSteady(ctx, res.windowEnd)
				return
			}
			if err := g.runSample(ctx, env); err != nil {
				errs[i] = fmt.Errorf("%s: %w", g.ns, err)
				fmt.Printf("  %s: FAILED: %v\n", g.ns, err)
				return
			}
			fmt.Printf("  %-28s %-8s %s stopped, %s led after %s\n", g.ns, g.kind, g.old.user, g.new.user, g.takeover().Round(time.Millisecond))
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	// Sample failures are reported in the results; a steady failure is fatal.
	for i, g := range all {
		if g.kind == kindSteady && errs[i] != nil {
			return nil, errors.Join(errs...)
		}
	}
	time.Sleep(time.Second)
	events, err := env.AuditEvents()
	if err != nil {
		return nil, err
	}
	res.requests = leaseRequests(events)
	return res, nil
}
