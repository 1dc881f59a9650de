// Command scale measures how the project behaves at the scale of one busy
// management cluster, against one real kube-apiserver and etcd (the binaries
// the tests use, started with test/testenv and its audit log).
//
// It runs in parts, one after another, on the same API server; each part
// writes its own section of docs/benchmarks.md.
//
// The hostedclusters part runs the real hypershift-operator binary as a
// process of its own, authenticated as a user bound to nothing but the
// operator's ClusterRole and leader-election Role, with the operator's
// default settings (its own election on, fencing on when the API server
// supports it). It creates -hostedclusters HostedClusters (1,000 by
// default, with their pull secrets, over -hostedcluster-namespaces
// namespaces, by -creators concurrent creators) from a release payload
// served by an in-process registry, and measures:
//
//   - the time from the first create until every HostedCluster has all its
//     objects (control-plane namespace, HostedControlPlane, the
//     control-plane-operator's ServiceAccount, Role, RoleBinding, Deployment
//     and pull secret, its Lease and, with fencing, its admission policy
//     binding), polled with metadata-only LISTs as admin; when the first one
//     was complete; and when every status was reported;
//   - the operator's peak resident memory (VmHWM of its process) and its
//     CPU time;
//   - the API requests the operator's user made per HostedCluster while
//     converging (until every status is complete and the operator's work
//     queue is empty), from the audit log, by verb and as reads and writes;
//   - the operator's writes per minute once converged, over a quiet window
//     (-quiet, at least 2 minutes for the report): its own election Lease
//     renewals are counted apart, and every other write is a failure.
//
// The electors part (test/bench/electorload) runs -electors of our
// leader electors (support/leaderelection), three per Lease, on the same
// API server, and measures the time until every Lease is held, the
// aggregate Lease writes and reads per second over -electors-window from
// the audit log, against what client-go's elector would send with the
// three anchor timings (leaders/RetryPeriod writes and
// followers/RetryPeriod reads per second), and the process's memory.
//
// The hostedclusters10000 part runs the hostedclusters part with 10,000
// HostedClusters over 100 namespaces, into a section of its own; it takes
// long, so it runs only when -run names it.
//
// The hostedclustersreplicas part (hostedclusters_replicas.go) converges
// the same HostedClusters with one replica (the anchor), then with 2 and 4
// replicas splitting 4 shards, each on a fresh API server, and sets their
// figures beside the anchor's; it runs only when -run names it.
//
// The fencebindings part (fencebindings.go) measures the management API
// server's CPU time per namespaced write with the fencing policy bound once
// per control-plane namespace, as the operator does, against no binding
// and against one binding for every namespace, for each of
// -fencebindings-namespaces (1,000 and 10,000 by default).
//
// A part is added to the parts list in main.go, with its flags and code in
// a file or package of its own, and gets the same API server after the
// parts before it (which stop what they started, and leave their objects).
//
// Run it with
//
//	make bench-scale
//
// which builds bin/hypershift-operator, etcd and kube-apiserver first. While
// developing, run a smaller one that leaves docs/benchmarks.md alone:
//
//	KUBEBUILDER_ASSETS=$PWD/bin go run ./test/bench/scale -hostedclusters=50 -report=false
//
// The command exits non-zero when a part fails, e.g. when the operator
// writes while converged. Every process it starts (etcd, kube-apiserver,
// the operator) is stopped when it ends, on errors and on Ctrl-C too.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/hypershift-le/hypershift/test/bench/electorload"
	"github.com/hypershift-le/hypershift/test/bench/report"
	"github.com/hypershift-le/hypershift/test/testenv"
)

// part is one benchmark run against the shared API server. run returns the
// markdown of its results (written even when it also returns an error, so
// that a failed requirement is on record) and an error when it failed.
type part struct {
	// name selects the part with -run.
	name string
	// section is the part's section in docs/benchmarks.md.
	section string
	// title heads the section.
	title string
	run   func(ctx context.Context, env *testenv.Env) (markdown string, err error)
	// optIn parts run only when -run names them (they take long).
	optIn bool
}

// parts run in this order. A part adds itself here and keeps its flags and
// code in a file of its own.
var parts = []part{
	{
		name:    "hostedclusters",
		section: "scale-hostedclusters",
		title:   "Scale: HostedClusters reconciled by one hypershift-operator",
		run:     hostedClusters,
	},
	{
		name:    "electors",
		section: "scale-electors",
		title:   "Scale: 1,002 of our electors on one API server",
		run: func(ctx context.Context, env *testenv.Env) (string, error) {
			return electorload.Run(ctx, env, *electors, *electorsWindow)
		},
	},
	{
		name:    "hostedclusters10000",
		section: "scale-hostedclusters-10000",
		title:   "Scale: 10,000 HostedClusters held by one management cluster",
		run:     hostedClusters10000,
		optIn:   true,
	},
	{
		name:    "hostedclustersreplicas",
		section: "scale-hostedclusters-replicas",
		title:   "Scale: HostedClusters split between hypershift-operator replicas by shard",
		run:     hostedClustersReplicas,
		optIn:   true,
	},
	{
		name:    "fencebindings",
		section: "scale-fencebindings",
		title:   "Scale: what fencing costs the management API server per write",
		run:     fenceBindings,
	},
}

var (
	runParts    = flag.String("run", "", "Comma-separated parts to run, of: "+partNames()+" (default all but hostedclusters10000, which runs only when named).")
	writeReport = flag.Bool("report", true, "Write the results into docs/benchmarks.md.")
	timeout     = flag.Duration("timeout", 2*time.Hour, "Give up, stopping everything, after this long.")

	electors       = flag.Int("electors", 1000, "How many electors the electors part runs, in groups of 3 per Lease.")
	electorsWindow = flag.Duration("electors-window", 2*time.Minute, "How long the electors part counts Lease requests once every Lease is held.")
)

func main() { os.Exit(run()) }

func run() int {
	flag.Parse()
	selected, err := selectParts(*runParts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	// Ctrl-C and SIGTERM cancel ctx: every part stops what it started, then
	// the API server and etcd stop. A second signal kills at once.
	ctx, env, done, err := report.Setup(*timeout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %v\n", err)
		return 1
	}
	defer done()

	machine := report.Machine(env)
	fmt.Printf("machine: %s\n", machine)
	path, err := report.File()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}

	code := 0
	for _, p := range selected {
		if ctx.Err() != nil {
			break
		}
		fmt.Printf("\n=== %s\n", p.name)
		started := time.Now()
		markdown, err := p.run(ctx, env)
		took := time.Since(started)
		fmt.Printf("=== %s took %s\n", p.name, took.Round(time.Second))
		if err != nil && ctx.Err() == nil {
			fmt.Fprintf(os.Stderr, "\nFAIL: %s: %v\n", p.name, err)
			code = 1
		}
		if markdown == "" || ctx.Err() != nil {
			continue
		}
		if !*writeReport {
			fmt.Printf("\n%s\n", markdown)
			continue
		}
		body := fmt.Sprintf("## %s\n\nCommand: `%s` (this part took %s). Machine: %s.\n\n%s",
			p.title, report.CommandLine("make bench-scale", "./test/bench/scale"), took.Round(time.Second), machine, markdown)
		if err := report.UpdateSection(path, p.section, body); err != nil {
			fmt.Fprintf(os.Stderr, "failed to write %s: %v\n", path, err)
			code = 1
			continue
		}
		fmt.Printf("wrote section %s of %s\n", p.section, path)
	}
	if ctx.Err() != nil {
		fmt.Fprintf(os.Stderr, "stopped: %v\n", context.Cause(ctx))
		return 1
	}
	return code
}

func partNames() string {
	names := make([]string, 0, len(parts))
	for _, p := range parts {
		names = append(names, p.name)
	}
	return strings.Join(names, ", ")
}

func selectParts(list string) ([]part, error) {
	if list == "" {
		var all []part
		for _, p := range parts {
			if !p.optIn {
				all = append(all, p)
			}
		}
		return all, nil
	}
	var selected []part
	for _, name := range strings.Split(list, ",") {
		found := false
		for _, p := range parts {
			if p.name == strings.TrimSpace(name) {
				selected, found = append(selected, p), true
			}
		}
		if !found {
			return nil, fmt.Errorf("unknown part %q in -run: the parts are %s", name, partNames())
		}
	}
	return selected, nil
}
