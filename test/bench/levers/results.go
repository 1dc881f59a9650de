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
	var b strings.Builder
	fmt.Fprintf(&b, "  %s: kube-apiserver CPU to serve %s, serving after %s, %d objects, %d watches",
		r.lever.name, r.cpu.Round(10*time.Millisecond), r.serving.Round(10*time.Millisecond), r.objects, r.watches)
	for _, program := range programs {
		u := r.usage[program]
		fmt.Fprintf(&b, "\n    %s: RssAnon %s, VmRSS %s, VmHWM %s, CPU for the load %s, CPU while settled %s",
			program, mib(float64(u.rssAnon)), mib(float64(u.rss)), mib(float64(u.hwm)), u.loadCPU.Round(10*time.Millisecond), u.idleCPU.Round(10*time.Millisecond))
	}
	return b.String()
}

// stats are the means of one setting's runs: RssAnon by program and all
// three's, with the range of the kube-apiserver's; the kube-apiserver's
// time to serve; CPU time of all three.
type stats struct {
	runs                     int
	rssAnon                  map[string]float64
	total                    float64
	minAnon, maxAnon         float64
	cpu, serving, load, idle float64
}

func summarize(runs []result) stats {
	s := stats{runs: len(runs), rssAnon: map[string]float64{}}
	for _, r := range runs {
		a := float64(r.usage[programs[0]].rssAnon)
		if s.minAnon == 0 || a < s.minAnon {
			s.minAnon = a
		}
		s.maxAnon = max(s.maxAnon, a)
		for _, program := range programs {
			u := r.usage[program]
			s.rssAnon[program] += float64(u.rssAnon)
			s.total += float64(u.rssAnon)
			s.load += u.loadCPU.Seconds()
			s.idle += u.idleCPU.Seconds()
		}
		s.cpu += r.cpu.Seconds()
		s.serving += r.serving.Seconds()
	}
	n := float64(len(runs))
	for program := range s.rssAnon {
		s.rssAnon[program] /= n
	}
	s.total, s.cpu, s.serving, s.load, s.idle = s.total/n, s.cpu/n, s.serving/n, s.load/n, s.idle/n
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
	fmt.Fprintf(&b, "## Control-plane memory levers, one at a time: kube-apiserver, etcd, kube-controller-manager\n\n")
	fmt.Fprintf(&b, "Command: %s (took %s). Machine: %s.\n\n", report.CommandLine("`make bench-levers`", "./test/bench/levers"), took.Round(time.Second), machine)
	fmt.Fprintf(&b, "Each run is a fresh etcd and kube-apiserver (without CRDs: a bare API server, as a hosted cluster's when it starts), then kube-controller-manager with the controllers and flags a hosted cluster's runs with, with one setting changed, under a small load: "+
		"%d namespaces of %d ConfigMaps (2 KiB), %d Secrets (1 KiB) and %d ServiceAccounts, and a watch open on every resource that can be watched (%d); "+
		"each process's memory is read from /proc after %s. RssAnon is a process's heap and stacks, the part of a container's working set a setting can change (the mapped binary, in VmRSS, is not). "+
		"CPU time and wall time to serve are the kube-apiserver's, from the start of etcd and the API server until it serves; CPU for the load is all three's while it is taken (opening the watches, storing the objects, sending their events, the controllers acting on them); CPU while settled is all three's over the %s the load was held. "+
		"An environment lever (GOGC) is set for all three processes. "+
		"%d rounds, each running the anchor, every lever, and the anchor again; a row is the mean of a setting's runs, the ratio against the anchor's mean (below 1: less).\n\n",
		namespaces, configMaps, secrets, serviceAccounts, first.watches, *settle, *settle, *rounds)
	b.WriteString("| setting | runs | kube-apiserver RssAnon (min-max) | / anchor | etcd RssAnon | / anchor | kube-controller-manager RssAnon | / anchor | all three | / anchor | CPU time to serve | / anchor | wall time to serve | CPU for the load | / anchor | CPU while settled | / anchor |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, name := range names {
		runs := byName[name]
		s := summarize(runs)
		fmt.Fprintf(&b, "| %s | %d | %s (%s-%s) | %s |", runs[0].lever.what, s.runs,
			mib(s.rssAnon[programs[0]]), mib(s.minAnon), mib(s.maxAnon), ratio(s.rssAnon[programs[0]], base.rssAnon[programs[0]]))
		for _, program := range programs[1:] {
			fmt.Fprintf(&b, " %s | %s |", mib(s.rssAnon[program]), ratio(s.rssAnon[program], base.rssAnon[program]))
		}
		fmt.Fprintf(&b, " %s | %s | %.2f s | %s | %.1f s | %.2f s | %s | %.2f s | %s |\n",
			mib(s.total), ratio(s.total, base.total), s.cpu, ratio(s.cpu, base.cpu), s.serving, s.load, ratio(s.load, base.load), s.idle, ratio(s.idle, base.idle))
	}
	return b.String()
}
