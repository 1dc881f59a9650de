package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// markdown reports the results; figures are reported whatever they are.
func (r *results) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Each HostedCluster runs a real hosted control plane on the local cluster (`test/localcluster`): the control-plane-operator, "+
		"etcd, kube-apiserver, kube-controller-manager and kube-scheduler as pods on %d real nodes (kubelet, containerd), published on a NodePort of a node; "+
		"each node reports this machine's CPUs, and a control plane requests 435m CPU, so two nodes of this 2-CPU machine would schedule 9 of the 10 created at once. "+
		"Time to a working API is from the HostedCluster's create request to the first successful list of the hosted cluster's namespaces "+
		"(what `kubectl get ns` sends) with the admin kubeconfig its status names, tried every %s.\n\n", *nodeCount, *poll)
	b.WriteString("| | clusters | p50 | max | goal |\n|---|---|---|---|---|\n")
	fmt.Fprintf(&b, "| one at a time (each destroyed before the next) | %d | %s | %s | <= 30s |\n", len(r.sequential), p50(r.sequential), maxOf(r.sequential))
	if len(r.concurrent) > 0 {
		fmt.Fprintf(&b, "| created at once | %d | %s | %s (all served %s after the first create) | all within 120s |\n",
			len(r.concurrent), p50(r.concurrent), maxOf(r.concurrent), r.concurrentAll.Round(100*time.Millisecond))
	}
	if len(r.timelines) > 0 {
		fmt.Fprintf(&b, "\nWhere the time goes, one at a time: each step of a HostedCluster's creation, from the management API server's audit log "+
			"(when each request completed), over the %d clusters created one at a time.\n\n%s", len(r.timelines), timelineMarkdown(r.timelines))
	}
	if len(r.memory) > 0 {
		b.WriteString("\nMemory of one hosted control plane, the sum of its containers, over the clusters created at once, once they all served, " +
			"by two methods in the same moment: the working set of each container's cgroup as its kubelet reports it (the summary API, " +
			"what `kubectl top` and evictions read), and the resident memory (VmRSS) of each container's process, the method of earlier " +
			"runs on the node agent. The two differ mostly by the programs' own mapped binaries: VmRSS counts them in every process (RssFile), while the page cache of an image's files is charged to one cgroup only, once per page, whoever read it first; the working set also counts the page cache a container keeps active (etcd's data, for one).\n\n" +
			"| | working set p50 | working set max | VmRSS p50 | VmRSS max |\n|---|---|---|---|---|\n")
		ws, rss := byComponent(r.memory, func(m memory) map[string]int64 { return m.workingSet }), byComponent(r.memory, func(m memory) map[string]int64 { return m.rss })
		row := func(label, c string) {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", label, mib(p50Int(ws[c])), mib(slices.Max(ws[c])), mib(p50Int(rss[c])), mib(slices.Max(rss[c])))
		}
		row("**whole control plane**", "")
		for _, c := range slices.Sorted(maps.Keys(ws)) {
			if c != "" {
				row(c+" (all replicas)", c)
			}
		}
	}
	if len(r.memory) > 0 && len(r.cpuSteady) > 0 {
		fmt.Fprintf(&b, "\nCPU of one hosted control plane, over the clusters created at once, from each container's cgroup as its kubelet reports it "+
			"(usageCoreNanoSeconds): the CPU time used from its start until every cluster served (starting up, %d at once on %d nodes), "+
			"and the mean use over the %s window below, once converged (what a request should reserve; a hosted cluster under load uses more).\n\n"+
			"| | CPU time to come up p50 | max | converged p50 | max |\n|---|---|---|---|---|\n", r.clusters, *nodeCount, r.quietFor.Round(time.Second))
		start := byComponent(r.memory, func(m memory) map[string]int64 { return m.cpu })
		steady := byComponent(r.cpuSteady, func(m memory) map[string]int64 { return m.cpu })
		window := r.quietFor.Nanoseconds()
		row := func(label, c string) {
			fmt.Fprintf(&b, "| %s | %.1f s | %.1f s | %s | %s |\n", label, float64(p50Int(start[c]))/1e9, float64(slices.Max(start[c]))/1e9,
				millicores(p50Int(steady[c]), window), millicores(slices.Max(steady[c]), window))
		}
		row("**whole control plane**", "")
		for _, c := range slices.Sorted(maps.Keys(steady)) {
			if c != "" {
				row(c+" (all replicas)", c)
			}
		}
	}
	if r.quietFor > 0 {
		minutes := r.quietFor.Minutes()
		fmt.Fprintf(&b, "\nControl-plane-operator writes once converged, over %s across the %d clusters (from the audit log): "+
			"**%.1f writes per minute** besides their Lease renewals (goal 0), and %.1f Lease renewals per minute.\n",
			r.quietFor.Round(time.Second), r.clusters, float64(r.writes)/minutes, float64(r.leases)/minutes)
		if len(r.writeSamples) > 0 {
			fmt.Fprintf(&b, "Writes seen: %s.\n", strings.Join(r.writeSamples, "; "))
		}
	}
	if r.restarts != nil {
		var parts []string
		for _, c := range slices.Sorted(maps.Keys(r.restarts)) {
			parts = append(parts, fmt.Sprintf("%s %d", c, r.restarts[c]))
		}
		if len(parts) == 0 {
			parts = []string{"none"}
		}
		fmt.Fprintf(&b, "\nContainer restarts in the %d clusters created at once, from their creation to the end of the run: %s.\n", r.clusters, strings.Join(parts, ", "))
		if len(r.restartSamples) > 0 {
			fmt.Fprintf(&b, "Last terminations: %s.\n", strings.Join(r.restartSamples, "; "))
		}
	}
	return b.String()
}

// byComponent lists, by component, one figure per control plane; the
// component "" is the whole control plane.
func byComponent(all []memory, of func(memory) map[string]int64) map[string][]int64 {
	out := map[string][]int64{}
	for _, m := range all {
		var total int64
		for c, v := range of(m) {
			out[c] = append(out[c], v)
			total += v
		}
		out[""] = append(out[""], total)
	}
	return out
}

func p50(d []time.Duration) string {
	if len(d) == 0 {
		return "-"
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[(len(s)-1)/2].Round(100 * time.Millisecond).String()
}

func maxOf(d []time.Duration) string {
	if len(d) == 0 {
		return "-"
	}
	return slices.Max(d).Round(100 * time.Millisecond).String()
}

func p50Int(v []int64) int64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

func mib(bytes int64) string {
	return fmt.Sprintf("%d MiB", bytes>>20)
}

// millicores is CPU time used over a window as the mean share of one CPU.
func millicores(used, window int64) string {
	if window <= 0 {
		return "-"
	}
	return fmt.Sprintf("%dm", used*1000/window)
}
