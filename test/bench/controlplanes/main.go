// Command controlplanes measures what a HostedCluster costs and how soon it
// serves, on the local cluster (test/localcluster) and its real nodes:
// etcd, kube-apiserver, kube-controller-manager and kube-scheduler pods
// for every hosted control plane, run by the real hypershift-operator and
// control-plane-operators, all in containers the nodes' kubelets run.
//
// It first reads how soon the nodes came up (process start to Ready, each
// and all) and times a pod from create to running, alone on one node and
// one per node at once (section nodes of docs/benchmarks.md). Then it
// installs the hypershift-operator with `hypershift install`, and:
//
//   - creates -sequential HostedClusters (5 by default) one at a time, each
//     destroyed once measured, and -concurrent (10) at once, each published
//     on a NodePort of a node as `hypershift create cluster none` does;
//     for each, it times from the create request to the first successful
//     list of the hosted cluster's namespaces (what `kubectl get ns` sends)
//     with the admin kubeconfig from the HostedCluster's
//     status.kubeconfig, polling every -poll;
//   - once the concurrent ones all serve, the memory of each hosted
//     control plane, summed over its containers (control-plane-operator,
//     etcd, kube-apiserver, kube-controller-manager, kube-scheduler), by
//     two methods at once: the working set its kubelet reports (summary
//     API) and the resident memory (VmRSS) of each container's process;
//   - the control-plane-operators' writes per minute once converged, from
//     the management API server's audit log, over -quiet after every
//     cluster serves and -settle more (their Lease renewals counted apart):
//     the goal is none.
//
// Run it with
//
//	make bench-controlplanes
//
// which builds the binaries first and writes the section controlplanes of
// docs/benchmarks.md. A smaller run that leaves the report alone:
//
//	KUBEBUILDER_ASSETS=$PWD/bin go run ./test/bench/controlplanes -sequential=1 -concurrent=2 -quiet=30s -report=false
//
// Every process it starts is stopped when it ends, on errors and on
// Ctrl-C too.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/hypershift-le/hypershift/test/bench/report"
)

var (
	sequential  = flag.Int("sequential", 5, "How many HostedClusters to create one at a time.")
	concurrent  = flag.Int("concurrent", 10, "How many HostedClusters to create at once.")
	quiet       = flag.Duration("quiet", 2*time.Minute, "How long to count the control-plane-operators' writes once every cluster serves.")
	settle      = flag.Duration("settle", 30*time.Second, "How long to wait, after every cluster serves, before counting writes.")
	poll        = flag.Duration("poll", 500*time.Millisecond, "How often to try the hosted API while waiting for it.")
	writeReport = flag.Bool("report", true, "Write the results into docs/benchmarks.md.")
	timeout     = flag.Duration("timeout", time.Hour, "Give up, stopping everything, after this long.")
	// Each node reports this machine's CPUs, and a control plane requests
	// 435m CPU: two nodes of a 2-CPU machine schedule 9, three hold the 10
	// created at once.
	nodeCount = flag.Int("nodes", 3, "How many real nodes the local cluster runs (each reports this machine's CPUs to the scheduler).")
)

func main() { os.Exit(run()) }

func run() int {
	flag.Parse()
	ctrl.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()

	b, err := start(ctx)
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %v\n", err)
		return 1
	}
	defer func() {
		if err := b.stop(); err != nil {
			fmt.Fprintf(os.Stderr, "failed to stop the local cluster: %v\n", err)
		}
	}()
	started := time.Now()
	if *densityMode {
		return b.runDensity(ctx, started)
	}
	startup, err := b.measureNodes(ctx)
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %v\n", err)
		return 1
	}
	res, err := b.measure(ctx)
	took := time.Since(started)
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %v\n", err)
	}
	if res == nil {
		return 1
	}
	markdown := res.markdown()
	if !*writeReport || interrupted(ctx) {
		fmt.Printf("\n%s\n%s\n", startup.markdown(), markdown)
		return exitCode(err)
	}
	nodesBody := fmt.Sprintf("## Real nodes: start-up and pods\n\nCommand: `%s`. Machine: %s.\n\n%s",
		report.CommandLine("make bench-controlplanes", "./test/bench/controlplanes"), b.machine, startup.markdown())
	if !writeSection("nodes", nodesBody) {
		return 1
	}
	body := fmt.Sprintf("## Hosted control planes: time to a working API, memory, writes\n\nCommand: `%s` (took %s). Machine: %s.\n\n%s",
		report.CommandLine("make bench-controlplanes", "./test/bench/controlplanes"), took.Round(time.Second), b.machine, markdown)
	if !writeSection("controlplanes", body) {
		return 1
	}
	return exitCode(err)
}

// writeSection replaces the section name of docs/benchmarks.md with body,
// saying on stderr why it could not.
func writeSection(name, body string) bool {
	path, err := report.Write(name, body)
	if err != nil {
		fmt.Fprintf(os.Stderr, "failed to write section %s: %v\n", name, err)
		return false
	}
	fmt.Printf("wrote section %s of %s\n", name, path)
	return true
}

// interrupted reports whether the run was stopped by a signal (not its
// timeout): its figures are printed but not written, so that stopping a
// run does not replace the recorded ones with part of a run.
func interrupted(ctx context.Context) bool {
	if errors.Is(ctx.Err(), context.Canceled) {
		fmt.Fprintln(os.Stderr, "interrupted: the figures printed here are part of a run; docs/benchmarks.md is left as it was")
		return true
	}
	return false
}

func exitCode(err error) int {
	if err != nil {
		return 1
	}
	return 0
}

// runDensity runs the density mode and writes its section.
func (b *bench) runDensity(ctx context.Context, started time.Time) int {
	res, err := b.density(ctx)
	took := time.Since(started)
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %v\n", err)
	}
	if res == nil {
		return 1
	}
	markdown := res.markdown()
	if !*writeReport || interrupted(ctx) {
		fmt.Printf("\n%s\n", markdown)
		return exitCode(err)
	}
	body := fmt.Sprintf("## Density: hosted control planes serving at once on one machine\n\nCommand: `%s` (took %s). Machine: %s.\n\n%s",
		report.CommandLine("make bench-density", "./test/bench/controlplanes"), took.Round(time.Second), b.machine, markdown)
	if !writeSection("density", body) {
		return 1
	}
	return exitCode(err)
}
