// The hostedclusters part against the previous run on record: its
// headline figures are read back from the section this part last wrote
// in docs/benchmarks.md and from this run's section, and shown side by
// side with their ratio, so that a change's effect is on record with it.

package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// headline are the figures compared with the previous run, each found in
// the part's section by the row that shows it.
var headline = []struct {
	name string
	re   *regexp.Regexp
}{
	{"every HostedCluster complete, s after the first create", regexp.MustCompile(`\| \*\*every HostedCluster complete\*\* \| \*\*([0-9.]+) s\*\*`)},
	{"every status complete but the silent CPO Lease, s", regexp.MustCompile(`\| every status complete but the silent CPO Lease \| ([0-9.]+) s`)},
	{"every status complete, s", regexp.MustCompile(`\| every status complete \| ([0-9.]+) s`)},
	{"converged (work queue empty), s", regexp.MustCompile(`\| the operator's work queue empty \(converged\) \| ([0-9.]+) s`)},
	{"create to complete p50, s", regexp.MustCompile(`\| create to complete, per HostedCluster \| p50 ([0-9.]+) s`)},
	{"create to complete max, s", regexp.MustCompile(`\| create to complete, per HostedCluster \| .*max ([0-9.]+) s`)},
	{"peak RSS (VmHWM), MiB", regexp.MustCompile(`peak RSS \(VmHWM\)\*\* \| \*\*([0-9.]+) MiB`)},
	{"requests per HostedCluster while converging", regexp.MustCompile(`requests per HostedCluster while converging\*\* \| \*\*([0-9.]+)\*\*`)},
	{"… reads", regexp.MustCompile(`while converging\*\* \| \*\*[0-9.]+\*\*: reads ([0-9.]+)`)},
	{"… writes", regexp.MustCompile(`while converging\*\* \| \*\*[0-9.]+\*\*: reads [0-9.]+, writes ([0-9.]+)`)},
	{"get secrets per HostedCluster", regexp.MustCompile(`\| get secrets \| ([0-9.]+) \|`)},
	{"CPU time while converging, s", regexp.MustCompile(`\| hypershift-operator CPU time while converging \| ([0-9.]+) s`)},
	{"reconciles per HostedCluster", regexp.MustCompile(`\| reconciles while converging \(controller metrics\) \| [0-9,]+, ([0-9.]+) per HostedCluster`)},
	{"failover: the standby leads, s after the kill", regexp.MustCompile(`\| the standby leads, after the kill \| ([0-9.]+) s`)},
	{"failover: its first pass done, s after it leads", regexp.MustCompile(`\| its first pass over every HostedCluster done, after it leads \| ([0-9.]+) s`)},
	{"failover: writes in that pass", regexp.MustCompile(`\| writes among them \| ([0-9]+) \|`)},
}

// clustersOf finds how many HostedClusters a section's run created.
var clustersOf = regexp.MustCompile(`\. ([0-9,]+) HostedClusters, each with its pull secret`)

// figuresOf reads the headline figures out of a section; a figure the
// section does not show is missing from the map.
func figuresOf(section string) map[string]float64 {
	figures := map[string]float64{}
	for _, h := range headline {
		if m := h.re.FindStringSubmatch(section); m != nil {
			if v, err := strconv.ParseFloat(m[1], 64); err == nil {
				figures[h.name] = v
			}
		}
	}
	return figures
}

// comparison is the markdown that sets this run's section beside the
// previous one's: a table of the headline figures with this / previous,
// or a sentence saying why there is none.
func comparison(previous, current string) string {
	if previous == "" {
		return "No previous run on record to compare with.\n"
	}
	prevN, curN := clustersOf.FindStringSubmatch(previous), clustersOf.FindStringSubmatch(current)
	if prevN == nil || curN == nil || prevN[1] != curN[1] {
		return "The previous run on record created another number of HostedClusters: no comparison.\n"
	}
	prev, cur := figuresOf(previous), figuresOf(current)
	var b strings.Builder
	b.WriteString("| figure | previous run on record | this run | this / previous |\n|---|---|---|---|\n")
	for _, h := range headline {
		p, okP := prev[h.name]
		c, okC := cur[h.name]
		if !okP && !okC {
			continue
		}
		ratio := "–"
		switch {
		case okP && okC && p > 0:
			ratio = fmt.Sprintf("%.2f", c/p)
		case okP && okC && p == 0 && c == 0:
			// Nothing then, nothing now (writes in a failover pass).
			ratio = "1.00"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", h.name, orDash(p, okP), orDash(c, okC), ratio)
	}
	return b.String()
}

func orDash(v float64, ok bool) string {
	if !ok {
		return "–"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}
