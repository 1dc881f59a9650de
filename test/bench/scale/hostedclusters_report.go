// Rendering the hostedclusters part's results: the details on stdout and
// the markdown section of docs/benchmarks.md.

package main

import (
	"fmt"
	"strings"
	"time"
)

// print writes the details to stdout.
func (res *hcResult) print() {
	r := res.run
	fmt.Printf("\nhypershift-operator requests from its start to the first create: %d (%s)\n", res.startup.total, res.startup.verbSummary(1))
	fmt.Printf("hypershift-operator requests while converging: %d, %.2f per HostedCluster (reads %.2f, writes %.2f); answered outside 2xx: %s\n",
		res.converging.total, float64(res.converging.total)/res.n(), float64(res.converging.reads)/res.n(), float64(res.converging.writes)/res.n(), res.converging.failedSummary())
	fmt.Println("  per HostedCluster, by call:")
	for _, call := range sortedKeys(res.converging.calls) {
		fmt.Printf("    %-55s %8d  %6.2f\n", call, res.converging.calls[call], float64(res.converging.calls[call])/res.n())
	}
	fmt.Printf("reconciles: %.0f while converging (%.0f errors), %.0f in the quiet window\n",
		res.reconciles(res.settledMetrics, ""), res.reconciles(res.settledMetrics, "error"),
		res.reconciles(res.endMetrics, "")-res.reconciles(res.settledMetrics, ""))
	fmt.Printf("hypershift-operator memory: VmHWM %s, VmRSS at the end %s, largest VmRSS sampled %s\n", mib(res.hwm), mib(res.rss), mib(res.sampledRSS))
	fmt.Printf("hypershift-operator CPU time: %s while converging, %s in the quiet window\n", res.convergingCPU(), res.quietCPU())
	fmt.Printf("quiet window %s: %d requests (%s)\n", r.quietEnd.Sub(r.quietStart).Round(time.Second), res.quietReqs.total, res.quietReqs.verbSummary(1))
	fmt.Printf("  election Lease writes: %d (%.1f/min)\n", len(res.quietElection), res.perMinute(len(res.quietElection)))
	if n := len(res.quietOtherWrites); n > 0 {
		fmt.Printf("\n!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n")
		fmt.Printf("!!! FAIL: the hypershift-operator wrote %d times (%.1f/min) while converged\n", n, res.perMinute(n))
		fmt.Printf("!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n")
		for i, e := range res.quietOtherWrites {
			if i == 100 {
				fmt.Printf("  ... and %d more\n", n-i)
				break
			}
			fmt.Printf("  %s\n", describe(e))
		}
		fmt.Println()
	} else {
		fmt.Printf("  other writes: 0, as required\n")
	}
}

// markdown is the part's section body.
func (res *hcResult) markdown(o hcOptions) string {
	r := res.run
	secs := func(t time.Time) string { return fmt.Sprintf("%.1f s", t.Sub(r.firstCreate).Seconds()) }
	n := len(r.clusters)
	var b strings.Builder
	fencing := "on"
	if !r.fencing {
		fencing = "unsupported by this API server"
	}
	kubeconfig := "from `$KUBECONFIG`, as in a pod: no client-side rate limit"
	if o.kubeconfigFlag {
		kubeconfig = "from `--kubeconfig`: client-go's default client-side rate limit (5 requests/s, burst 10, per resource)"
	}
	workers := fmt.Sprintf("%d HostedClusters reconciled at once", r.workers)
	if o.workers == 0 {
		workers += " (its default --max-concurrent-reconciles)"
	}
	fmt.Fprintf(&b, "The real `hypershift-operator` process with its default settings (its own election: %s; fencing %s; %s), "+
		"as a user bound only to its ClusterRole and election Role, kubeconfig %s. "+
		"%s HostedClusters, each with its pull secret, as `hypershift create cluster none` makes them, over %d namespaces, created by %d concurrent clients. "+
		"A HostedCluster is complete when its %d objects exist (%s), polled with metadata-only LISTs every %s; "+
		"its status is complete when it reports a successful reconcile of its generation, the release version, the CPO Lease, LeaderFencing, and Available=Unknown (ControlPlaneOperatorSilent) once the CPO Lease has gone its lease duration without a holder: no control-plane-operator runs here. "+
		"Requests are counted from the API server's audit log, by the operator's user.\n\n",
		r.election, fencing, workers, kubeconfig,
		thousands(n), o.namespaces, o.creators, len(r.kinds), kindList(r.kinds), o.poll)
	b.WriteString("| measure | result |\n|---|---|\n")
	row := func(k, v string) { fmt.Fprintf(&b, "| %s | %s |\n", k, v) }
	row("all HostedClusters and pull secrets created", secs(r.allCreated)+" after the first create")
	row("first HostedCluster complete", fmt.Sprintf("%s after the first create (audit log; first poll that saw one: %s)", secs(res.firstDone), secs(r.firstComplete)))
	row("**every HostedCluster complete**", "**"+secs(r.allObjects)+"** after the first create")
	row("every status complete but the silent CPO Lease", secs(r.settledButSilence)+" after the first create: all of the status above but Available=Unknown (ControlPlaneOperatorSilent), "+
		"which no operator may report before a CPO Lease has gone its lease duration unheld; the operator's own work, without that rule's wait")
	row("every status complete", secs(r.settled)+" after the first create")
	row("the operator's work queue empty (converged)", secs(r.drained)+" after the first create")
	row("create to complete, per HostedCluster", fmt.Sprintf("p50 %.1f s, p90 %.1f s, max %.1f s", res.percentile(0.5).Seconds(), res.percentile(0.9).Seconds(), res.percentile(1).Seconds()))
	row("**hypershift-operator peak RSS (VmHWM)**", fmt.Sprintf("**%s** (VmRSS at the end: %s)", mib(res.hwm), mib(res.rss)))
	c := res.converging
	row("**hypershift-operator requests per HostedCluster while converging**", fmt.Sprintf("**%.2f**: reads %.2f, writes %.2f (%s in all, from the first create until converged)",
		float64(c.total)/res.n(), float64(c.reads)/res.n(), float64(c.writes)/res.n(), thousands(c.total)))
	row("… by verb, per HostedCluster", c.verbSummary(res.n()))
	row("… answered outside 2xx", c.failedSummary())
	row("… its own election Lease writes among them", fmt.Sprint(res.convergingElection))
	row("hypershift-operator CPU time while converging", res.convergingCPU())
	row("management kube-apiserver CPU time while converging (every client's requests, this benchmark's polls among them)", res.apiServerCPU())
	row("management kube-apiserver memory once converged", fmt.Sprintf("VmRSS %s, peak (VmHWM) %s", mib(res.run.apiRSS), mib(res.run.apiHWM)))
	row("reconciles while converging (controller metrics)", fmt.Sprintf("%s, %.2f per HostedCluster, %.0f errors",
		thousands(int(res.reconciles(res.settledMetrics, ""))), res.reconciles(res.settledMetrics, "")/res.n(), res.reconciles(res.settledMetrics, "error")))
	verdict := "0/min, as required"
	if k := len(res.quietOtherWrites); k > 0 {
		verdict = fmt.Sprintf("FAIL: %d writes, %.1f/min (required: 0)", k, res.perMinute(k))
	}
	window := r.quietEnd.Sub(r.quietStart).Round(time.Second)
	row(fmt.Sprintf("**hypershift-operator writes per minute once converged** (%s window)", window), "**"+verdict+"**")
	row("… its own election Lease writes in that window", fmt.Sprintf("%d (%.1f/min)", len(res.quietElection), res.perMinute(len(res.quietElection))))
	row("… all its requests in that window", fmt.Sprintf("%d (%s); reconciles: %.0f; CPU time: %s", res.quietReqs.total, orNone(res.quietReqs.verbSummary(1)),
		res.reconciles(res.endMetrics, "")-res.reconciles(res.settledMetrics, ""), res.quietCPU()))
	if window < minQuiet {
		fmt.Fprintf(&b, "\nThe quiet window is shorter than %s: this run does not show the steady state.\n", minQuiet)
	}
	b.WriteString("\nRequests per HostedCluster while converging, by call:\n\n| call | per HostedCluster |\n|---|---|\n")
	for _, call := range sortedKeys(c.calls) {
		fmt.Fprintf(&b, "| %s | %.2f |\n", call, float64(c.calls[call])/res.n())
	}
	return b.String()
}

func kindList(kinds []objectKind) string {
	var names []string
	for _, k := range kinds {
		names = append(names, k.kind)
	}
	return strings.Join(names, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// thousands formats n with thousands separators.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
