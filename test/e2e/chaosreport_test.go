package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hypershift-le/hypershift/test/bench/report"
)

// writeChaosReport writes the chaos mode's rounds, per fault, to the
// "chaos" section of docs/benchmarks.md, and logs it.
func writeChaosReport(t *testing.T, rounds []chaosRound, budget time.Duration, maxRounds int, setUp, ran time.Duration) {
	t.Helper()
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("## Chaos: the node faults in a loop\n\n")
	w("Command: `make chaos` (E2E_CHAOS=%s, E2E_CHAOS_ROUNDS=%d). Machine: %s, %d real nodes. Set-up %s, %d rounds in %s.\n\n",
		budget, maxRounds, report.Machine(lc.Env), len(lc.Nodes), setUp.Round(time.Second), len(rounds), ran.Round(time.Second))
	w("%d HighlyAvailable HostedClusters at the default timings (CPO lease 60 s, renew deadline 45 s; HO the same), each spread over the nodes, each polled through its endpoint every 250 ms. ", chaosClusters)
	w("Round after round one fault, in turn, on the node of the first cluster's CPO leader (never the endpoints' node; the hypershift-operator's leader moved off it first): ")
	w("its kubelet restarted; `kubectl drain`; the node lost (kubelet, containerd and every container killed, its objects left as they are), brought back once its leader was replaced and it read NotReady; the node cut off from the management API server, healed once its leader was replaced; or the leader's process killed until the kubelet holds it in restart back-off. ")
	w("The last fault loses the node of the hypershift-operator's leader instead (the CPO leaders on it are hit too), brought back once the other replica leads and the node read NotReady. ")
	w("Then every cluster must recover (members back, spread, Available) before the next round. Times are from the fault; a cluster is hit when its CPO leader ran on the node (for the crash loop: the first cluster). ")
	w("Writes outside a holding are replayed from the audit log: every successful CPO write against the holdings its pod's Lease writes show, and the same for the hypershift-operator's.\n\n")
	w("| fault | rounds | clusters hit | handovers | Lease released by the HO, median (max) | standby led, median (max) | HO Lease taken by its other replica, median | node NotReady, median | every cluster recovered, median (max) | hosted requests failed / sent | writes outside a holding (CPO, HO) |\n")
	w("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, f := range chaosFaults {
		var n, hit, handovers, ok, failed, outside, hoOutside int
		var released, takeover, operator, notReady, recovered []time.Duration
		for _, r := range rounds {
			if r.fault != f.name {
				continue
			}
			n++
			hoOutside += r.operatorOutside
			recovered = append(recovered, r.recovered.Sub(r.start))
			if !r.operatorTakeover.IsZero() {
				operator = append(operator, r.operatorTakeover.Sub(r.start))
			}
			if !r.notReady.IsZero() {
				notReady = append(notReady, r.notReady.Sub(r.start))
			}
			for _, o := range r.clusters {
				ok, failed, outside = ok+o.ok, failed+o.failed, outside+o.outside
				if !o.hit {
					continue
				}
				hit++
				if !o.released.IsZero() {
					released = append(released, o.released.Sub(r.start))
				}
				if !o.takeover.IsZero() {
					handovers++
					takeover = append(takeover, o.takeover.Sub(r.start))
				}
			}
		}
		if n == 0 {
			continue
		}
		w("| %s | %d | %d | %d | %s | %s | %s | %s | %s | %d / %d | %d, %d |\n", f.name, n, hit, handovers,
			medianMax(released), medianMax(takeover), medianOnly(operator), medianOnly(notReady), medianMax(recovered), failed, ok+failed, outside, hoOutside)
	}
	w("\nEvery round:\n\n| round | fault | node | per cluster: leader hit, released +, led + | NotReady + | recovered + | hosted failed / sent |\n|---|---|---|---|---|---|---|\n")
	for i, r := range rounds {
		var per []string
		ok, failed := 0, 0
		for _, o := range r.clusters {
			ok, failed = ok+o.ok, failed+o.failed
			if !o.hit {
				per = append(per, o.cluster+": not hit")
				continue
			}
			per = append(per, fmt.Sprintf("%s: released %s, led %s", o.cluster, sinceOrNone(o.released, r.start), sinceOrNone(o.takeover, r.start)))
		}
		w("| %d | %s | %s | %s | %s | %s | %d / %d |\n", i+1, r.fault, r.node, strings.Join(per, "; "), sinceOrNone(r.notReady, r.start),
			r.recovered.Sub(r.start).Round(time.Second), failed, ok+failed)
	}
	var failures []string
	for i, r := range rounds {
		for _, o := range r.clusters {
			for _, f := range o.failures {
				failures = append(failures, fmt.Sprintf("round %d (%s), %s: %s", i+1, r.fault, o.cluster, f))
			}
		}
	}
	if len(failures) > 0 {
		w("\nThe failed hosted requests, with when and why:\n\n")
		for _, f := range failures {
			w("- %s\n", f)
		}
	}
	w("\nFailed hosted requests are counted, not judged here: the stories bound them (none for a kubelet restart, a drain or a cut-off node; for a lost node, only until its kube-apiserver leaves the Service's endpoints, `apiFailuresAfterNotReady`). A failure outside those bounds in this table is a finding to chase with `make test-e2e`.\n")
	t.Logf("\n%s", b.String())
	if _, err := report.Write("chaos", b.String()); err != nil {
		t.Errorf("failed to write the chaos section of docs/benchmarks.md: %v", err)
	}
}

// medianMax is "median (max)" of ds, or "-" when there are none.
func medianMax(ds []time.Duration) string {
	if len(ds) == 0 {
		return "-"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return fmt.Sprintf("%s (%s)", roundFor(s[len(s)/2]), roundFor(s[len(s)-1]))
}

// medianOnly is the median of ds, or "-" when there are none.
func medianOnly(ds []time.Duration) string {
	if len(ds) == 0 {
		return "-"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return roundFor(s[len(s)/2])
}

func roundFor(d time.Duration) string {
	if d < 10*time.Second {
		return d.Round(10 * time.Millisecond).String()
	}
	return d.Round(100 * time.Millisecond).String()
}
