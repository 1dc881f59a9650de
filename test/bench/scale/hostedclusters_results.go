// What the hostedclusters part measured, from the audit log and the
// milestones of the run.

package main

import (
	"fmt"
	"slices"
	"time"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/hypershift-le/hypershift/test/auditlog"
)

// hcResult is what the hostedclusters part measured.
type hcResult struct {
	run *hcRun
	// startup, converging and quietReqs are the HO's requests from its
	// start to the first create, from then until converged (its work
	// queue empty), and in the quiet window.
	startup, converging, quietReqs tally
	// convergingElection counts the HO's election Lease writes while converging.
	convergingElection int
	// quietElection and quietOtherWrites are the HO's writes in the quiet
	// window: of its own election Lease, and of anything else.
	quietElection    []auditv1.Event
	quietOtherWrites []auditv1.Event
	// latencies are, per HostedCluster, the time from its create to the
	// first write of its last object; firstDone the earliest such write.
	latencies []time.Duration
	firstDone time.Time
	// rss and hwm are the HO's VmRSS and VmHWM at the end; sampledRSS the
	// largest VmRSS sampled.
	rss, hwm, sampledRSS       int64
	settledMetrics, endMetrics map[string]float64
}

// isElection tells the HO's own election Lease requests.
func isElection(e auditv1.Event) bool {
	return e.ObjectRef != nil && e.ObjectRef.Resource == "leases" && e.ObjectRef.Namespace == operatorNamespace
}

func (r *hcRun) analyze(all []auditv1.Event) *hcResult {
	res := &hcResult{run: r}
	ho := byUser(all, operatorUser)
	res.startup = count(between(ho, r.operatorStarted, r.firstCreate))
	converging := between(ho, r.firstCreate, r.quietStart)
	res.converging = count(converging)
	for _, e := range converging {
		if isElection(e) && auditlog.IsWrite(e) {
			res.convergingElection++
		}
	}
	quiet := between(ho, r.quietStart, r.quietEnd)
	res.quietReqs = count(quiet)
	for _, e := range quiet {
		switch {
		case !auditlog.IsWrite(e):
		case isElection(e):
			res.quietElection = append(res.quietElection, e)
		default:
			res.quietOtherWrites = append(res.quietOtherWrites, e)
		}
	}

	// Per HostedCluster: its create, and the first successful write of
	// each of its objects by the HO.
	createdAt := make([]time.Time, len(r.clusters))
	index := map[string]int{}
	for i, hc := range r.clusters {
		index[hc.Namespace+"/"+hc.Name] = i
	}
	done := make([]time.Time, len(r.clusters))
	objects := make([]int, len(r.clusters))
	seen := map[string]bool{}
	for _, e := range all {
		if e.ObjectRef == nil || !auditlog.Succeeded(e) {
			continue
		}
		if e.Verb == "create" && e.ObjectRef.Resource == "hostedclusters" && e.ObjectRef.Subresource == "" {
			if i, ok := index[e.ObjectRef.Namespace+"/"+e.ObjectRef.Name]; ok {
				createdAt[i] = e.RequestReceivedTimestamp.Time
			}
			continue
		}
		if e.User.Username != operatorUser || !auditlog.IsWrite(e) || e.Verb == "delete" {
			continue
		}
		key := auditKey(e)
		i, ok := r.owner[key]
		if !ok || seen[key] {
			continue
		}
		seen[key] = true
		objects[i]++
		done[i] = maxTime(done[i], e.StageTimestamp.Time)
	}
	for i := range r.clusters {
		if objects[i] != len(r.kinds) || createdAt[i].IsZero() {
			continue
		}
		res.latencies = append(res.latencies, done[i].Sub(createdAt[i]))
		if res.firstDone.IsZero() || done[i].Before(res.firstDone) {
			res.firstDone = done[i]
		}
	}
	slices.Sort(res.latencies)
	return res
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// convergingCPU is the HO's CPU time from the first create until
// converged, and its share of that time.
func (res *hcResult) convergingCPU() string {
	r := res.run
	return cpuShare(r.cpuAtQuietStart-r.cpuAtFirstCreate, r.quietStart.Sub(r.firstCreate))
}

// apiServerCPU is the management kube-apiserver's CPU time from the first
// create until converged (every request counts, the benchmark's polls
// among them), and its share of that time.
func (res *hcResult) apiServerCPU() string {
	r := res.run
	return cpuShare(r.apiCPUAtQuietStart-r.apiCPUAtFirstCreate, r.quietStart.Sub(r.firstCreate))
}

// quietCPU is the HO's CPU time in the quiet window, and its share of it.
func (res *hcResult) quietCPU() string {
	r := res.run
	return cpuShare(r.cpuAtQuietEnd-r.cpuAtQuietStart, r.quietEnd.Sub(r.quietStart))
}

// cpuShare is "12.3 s (5.0% of one CPU over 4m5s)".
func cpuShare(cpu, wall time.Duration) string {
	return fmt.Sprintf("%.1f s (%.1f%% of one CPU over %s)", cpu.Seconds(), 100*cpu.Seconds()/wall.Seconds(), wall.Round(time.Second))
}

func (res *hcResult) n() float64 { return float64(len(res.run.clusters)) }

func (res *hcResult) quietMinutes() float64 {
	return res.run.quietEnd.Sub(res.run.quietStart).Minutes()
}

func (res *hcResult) perMinute(n int) float64 { return float64(n) / res.quietMinutes() }

// percentile of the sorted latencies.
func (res *hcResult) percentile(p float64) time.Duration {
	if len(res.latencies) == 0 {
		return 0
	}
	return res.latencies[min(len(res.latencies)-1, int(p*float64(len(res.latencies))))]
}

func (res *hcResult) reconciles(m map[string]float64, result string) float64 {
	labels := []string{hcController}
	if result != "" {
		labels = append(labels, `result="`+result+`"`)
	}
	sum, _ := metric(m, "controller_runtime_reconcile_total", labels...)
	return sum
}
