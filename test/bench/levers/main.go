// Command levers measures what single settings of a hosted control plane
// (its kube-apiserver, etcd and kube-controller-manager) save of its
// memory and cost of its start-up: one lever at a time, each run a fresh
// etcd and kube-apiserver (test/testenv, without the management cluster's
// CRDs and policies: a bare API server, as a hosted cluster's is when it
// starts) and kube-controller-manager with a hosted cluster's controllers,
// against an anchor run with no lever in the same process, first and last
// (their difference is the noise).
//
// Each run starts the API server, times it to serving (CPU time and wall
// time, from the process's start), starts the controller manager, then
// gives them a small load: a few hundred objects (ConfigMaps, Secrets and
// ServiceAccounts over ten namespaces) and a watch open on every resource
// that can be watched, as a fresh cluster's controllers and a kubectl user
// keep; after a settle period it reads each process's memory from /proc:
// RssAnon (its heap and stacks: what the container's cgroup charges it
// besides page cache, the working set's part a setting can change), VmRSS
// and VmHWM (which also count its mapped binary).
//
//	make bench-levers
//
// writes the "levers" section of docs/benchmarks.md. While developing:
//
//	KUBEBUILDER_ASSETS=$PWD/bin go run ./test/bench/levers -report=false -levers=gogc50
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/hypershift-le/hypershift/test/bench/report"
)

var (
	leversFlag  = flag.String("levers", "", "Only these levers (names, comma-separated), besides the anchor; all when empty.")
	rounds      = flag.Int("rounds", 2, "Rounds: each measures the anchor, every lever, and the anchor again.")
	settle      = flag.Duration("settle", 20*time.Second, "How long the API server holds the load before its memory is read.")
	writeReport = flag.Bool("report", true, "Write the results into docs/benchmarks.md.")
	timeout     = flag.Duration("timeout", 30*time.Minute, "Give up, stopping everything, after this long.")
)

func main() { os.Exit(run()) }

func run() int {
	flag.Parse()
	ctrl.SetLogger(logr.Discard())
	klog.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()

	chosen := levers
	if *leversFlag != "" {
		names := strings.Split(*leversFlag, ",")
		chosen = slices.DeleteFunc(slices.Clone(levers), func(l lever) bool { return !slices.Contains(names, l.name) })
		if len(chosen) != len(names) {
			fmt.Fprintf(os.Stderr, "unknown lever in -levers %q; known: %s\n", *leversFlag, leverNames())
			return 2
		}
	}
	begun := time.Now()
	var results []result
	var machine string
	for round := range *rounds {
		for _, l := range append(append([]lever{anchor}, chosen...), anchor) {
			fmt.Printf("round %d, %s: running...\n", round+1, l.name)
			r, m, err := measure(ctx, l, *settle)
			if err != nil {
				fmt.Fprintf(os.Stderr, "FAIL: %s: %v\n", l.name, err)
				return 1
			}
			if machine == "" {
				machine = m
				fmt.Printf("machine: %s\n", machine)
			}
			results = append(results, r)
			fmt.Println(r.line())
		}
	}
	body := section(machine, time.Since(begun), results)
	fmt.Println()
	fmt.Println(body)
	if !*writeReport {
		return 0
	}
	path, err := report.Write("levers", body)
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %v\n", err)
		return 1
	}
	fmt.Printf("wrote %s\n", path)
	return 0
}
