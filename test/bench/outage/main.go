// Command outage measures what a management API outage costs the
// project's leader election: many leaders with leader-only controllers and
// their standbys, cut off from one real kube-apiserver (test/testenv) by a
// proxy that holds every byte for 30s, 60s and 120s, then let through.
//
// Two behaviours run side by side, one after the other, per outage:
//
//   - ours: a leader whose renewals go unanswered stops its controllers at
//     the renew deadline and stays; it leads again, in a new term, once its
//     compare-and-swap renewal succeeds (support/leaderelection);
//   - exit on deadline (the previous behaviour, and client-go's): the
//     benchmark restarts a candidate the moment it stops leading, as a
//     kubelet restarts a process that exits, after a 10s back-off
//     (CrashLoopBackOff's first delay); the restarted process builds its
//     manager, caches and election anew.
//
// Per run: process restarts, holder changes (the Leases' transitions), the
// time from the API server answering again to every leader working again
// (its controllers set up for a new term), and the requests per second the
// candidates send in the first 30s after recovery (from the audit log).
//
//	make bench-outage
//
// writes the "outage" section of docs/benchmarks.md. While developing:
//
//	KUBEBUILDER_ASSETS=$PWD/bin go run ./test/bench/outage -leases=10 -outages=30s -report=false
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/hypershift-le/hypershift/test/bench/report"
)

var (
	leases      = flag.Int("leases", 100, "Leases, each with a leader and a standby (HostedClusters' worth of control-plane-operators).")
	outagesFlag = flag.String("outages", "30s,60s,120s", "Outage lengths, comma-separated.")
	writeReport = flag.Bool("report", true, "Write the results into docs/benchmarks.md.")
	timeout     = flag.Duration("timeout", 45*time.Minute, "Give up, stopping everything, after this long.")
)

func main() { os.Exit(run()) }

func run() int {
	flag.Parse()
	var outages []time.Duration
	for _, s := range strings.Split(*outagesFlag, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil || d <= 0 {
			fmt.Fprintf(os.Stderr, "bad -outages %q\n", *outagesFlag)
			return 2
		}
		outages = append(outages, d)
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

	var results []result
	for _, outage := range outages {
		for _, mode := range []mode{cutOff, exitOnDeadline} {
			fmt.Printf("%s, outage %s: running %d Leases...\n", mode, outage, *leases)
			r, err := measure(ctx, env, mode, *leases, outage)
			if err != nil {
				fmt.Fprintf(os.Stderr, "FAIL: %s, outage %s: %v\n", mode, outage, err)
				return 1
			}
			fmt.Println(r.row())
			results = append(results, r)
		}
	}
	wall := time.Since(begun).Round(time.Second)
	markdown, failures := render(results, machine, report.CommandLine("make bench-outage", "./test/bench/outage"), wall)
	fmt.Printf("\n%s\nwall time: %s\n", markdown, wall)
	if *writeReport {
		if _, err := report.Write("outage", markdown); err != nil {
			fmt.Fprintf(os.Stderr, "failed to write the report: %v\n", err)
			return 1
		}
	}
	if len(failures) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: %s\n", strings.Join(failures, "; "))
		return 1
	}
	return 0
}

// render is the report section: one row per outage and behaviour, then the
// goals for ours.
func render(results []result, machine, command string, wall time.Duration) (string, []string) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\nMachine: %s. Wall time %s. Timings 60s/45s/2s, renew every 30s; every candidate's bytes held at one proxy for the outage.\n\n", command, machine, wall)
	b.WriteString("| behaviour | outage | Leases | process restarts | holder changes | recovery p50 | recovery max | requests/s, first 30s after |\n|---|---|---|---|---|---|---|---|\n")
	var failures []string
	for _, r := range results {
		b.WriteString(r.row() + "\n")
		if r.mode != cutOff {
			continue
		}
		p50, max := r.recovery()
		switch {
		case r.restarts != 0:
			failures = append(failures, fmt.Sprintf("%s: %d restarts, want 0", r.outage, r.restarts))
		case r.holderChanges != 0:
			failures = append(failures, fmt.Sprintf("%s: %d holder changes, want 0", r.outage, r.holderChanges))
		case p50 > 2*time.Second || max > 5*time.Second:
			failures = append(failures, fmt.Sprintf("%s: recovery p50 %s max %s, want <= 2s and <= 5s", r.outage, p50, max))
		}
	}
	b.WriteString("\nGoals for ours: no restart, no holder change, every leader working again within 2s (median) and 5s (max) of the API server answering.\n")
	for _, outage := range uniqueOutages(results) {
		var ours, old float64
		for _, r := range results {
			if r.outage == outage && r.mode == cutOff {
				ours = r.requestsPerSecond
			}
			if r.outage == outage && r.mode == exitOnDeadline {
				old = r.requestsPerSecond
			}
		}
		if old > 0 {
			fmt.Fprintf(&b, "\nOutage %s: requests in the first 30s after recovery, ours / exit on deadline = %.2f.", outage, ours/old)
		}
	}
	b.WriteString("\n")
	return b.String(), failures
}

func uniqueOutages(results []result) []time.Duration {
	var out []time.Duration
	for _, r := range results {
		if !slices.Contains(out, r.outage) {
			out = append(out, r.outage)
		}
	}
	return out
}
