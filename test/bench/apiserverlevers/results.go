package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hypershift-le/hypershift/test/bench/report"
)

func mib(b float64) string { return fmt.Sprintf("%.0f MiB", b/(1<<20)) }

func ratio(a, b float64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", a/b)
}

// line is one run's figures, as the command prints them while it runs.
func (r result) line() string {
	return fmt.Sprintf("  %s: RssAnon %s, VmRSS %s, VmHWM %s, CPU to serve %s, serving after %s, CPU for the load %s, CPU while settled %s, %d objects, %d watches",
		r.lever.name, mib(float64(r.rssAnon)), mib(float64(r.rss)), mib(float64(r.hwm)),
		r.cpu.Round(10*time.Millisecond), r.serving.Round(10*time.Millisecond), r.loadCPU.Round(10*time.Millisecond), r.idleCPU.Round(10*time.Millisecond), r.objects, r.watches)
}

// stats are the means of one setting's runs, and the range of RssAnon.
type stats struct {
	runs                                   int
	rssAnon, rss, cpu, serving, load, idle float64
	minAnon, maxAnon                       float64
}

func summarize(runs []result) stats {
	s := stats{runs: len(runs)}
	for _, r := range runs {
		a := float64(r.rssAnon)
		if s.minAnon == 0 || a < s.minAnon {
			s.minAnon = a
		}
		s.maxAnon = max(s.maxAnon, a)
		s.rssAnon += a
		s.rss += float64(r.rss)
		s.cpu += r.cpu.Seconds()
		s.serving += r.serving.Seconds()
		s.load += r.loadCPU.Seconds()
		s.idle += r.idleCPU.Seconds()
	}
	n := float64(len(runs))
	s.rssAnon, s.rss, s.cpu, s.serving, s.load, s.idle = s.rssAnon/n, s.rss/n, s.cpu/n, s.serving/n, s.load/n, s.idle/n
	return s
}

// section is the report of a run: one row per setting, the means of its
// runs, with ratios against the anchor's.
func section(machine string, took time.Duration, results []result) string {
	var names []string
	byName := map[string][]result{}
	for _, r := range results {
		if !slices.Contains(names, r.lever.name) {
			names = append(names, r.lever.name)
		}
		byName[r.lever.name] = append(byName[r.lever.name], r)
	}
	base := summarize(byName[anchor.name])
	first := results[0]
	var b strings.Builder
	fmt.Fprintf(&b, "## kube-apiserver memory levers, one at a time\n\n")
	fmt.Fprintf(&b, "Command: %s (took %s). Machine: %s.\n\n", report.CommandLine("`make bench-apiserver-levers`", "./test/bench/apiserverlevers"), took.Round(time.Second), machine)
	fmt.Fprintf(&b, "Each run is a fresh etcd and kube-apiserver (without CRDs: a bare API server, as a hosted cluster's when it starts) with one setting changed, under a small load: "+
		"%d namespaces of %d ConfigMaps (2 KiB), %d Secrets (1 KiB) and %d ServiceAccounts, and a watch open on every resource that can be watched (%d); "+
		"its memory is read from /proc after %s. RssAnon is the process's heap and stacks, the part of a container's working set a setting can change; VmRSS also counts its mapped binary. "+
		"CPU time and wall time to serve are from the start of etcd and the API server until it serves; CPU for the load is the API server's while it takes it (opening the watches, storing the objects, sending their events); CPU while settled is over the %s the load was held. "+
		"%d rounds, each running the anchor, every lever, and the anchor again; a row is the mean of a setting's runs, the ratio against the anchor's mean (below 1: less).\n\n",
		namespaces, configMaps, secrets, serviceAccounts, first.watches, *settle, *settle, *rounds)
	b.WriteString("| setting | runs | RssAnon (min-max) | / anchor | VmRSS | / anchor | CPU time to serve | / anchor | wall time to serve | CPU for the load | / anchor | CPU while settled | / anchor |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, name := range names {
		runs := byName[name]
		s := summarize(runs)
		fmt.Fprintf(&b, "| %s | %d | %s (%s-%s) | %s | %s | %s | %.2f s | %s | %.1f s | %.2f s | %s | %.2f s | %s |\n",
			runs[0].lever.what, s.runs, mib(s.rssAnon), mib(s.minAnon), mib(s.maxAnon), ratio(s.rssAnon, base.rssAnon),
			mib(s.rss), ratio(s.rss, base.rss), s.cpu, ratio(s.cpu, base.cpu), s.serving, s.load, ratio(s.load, base.load), s.idle, ratio(s.idle, base.idle))
	}
	return b.String()
}
