// The failover step of the hostedclusters part: once every HostedCluster
// has converged, a standby replica starts, the leader is killed with
// SIGKILL, and the standby's first pass over every HostedCluster is timed
// and its requests counted (it should write nothing: the world is as it
// wants it).

package main

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/test/auditlog"
)

// standbyPod is the standby replica's POD_NAME.
const standbyPod = "hypershift-operator-1"

// failoverResult is what the failover step measured.
type failoverResult struct {
	// warm is how long the standby ran before the leader was killed.
	warm time.Duration
	// standbyRSS is the standby's RSS just before the kill.
	standbyRSS int64
	// killed, led and passDone are the kill, the moment the standby held
	// the Lease, and the end of its first pass over every HostedCluster
	// (as many reconciles as HostedClusters, queue empty, no worker busy).
	killed, led, passDone time.Time
	reconciles            float64
	// requests are the HO's requests from the kill to passDone, without
	// its election Lease's; writes lists their writes.
	requests tally
	writes   []string
}

// failover starts a standby, waits warm for it to fill its cache, kills
// the leader (r.ho) with SIGKILL and follows the standby until its first
// pass is done; r.ho is the standby afterwards.
func (r *hcRun) failover(ctx context.Context, binary string, warm, timeout time.Duration) (*failoverResult, error) {
	res := &failoverResult{}
	standby, metricsURL, err := r.launchOperator(binary, standbyPod, hcFlags.workers)
	if err != nil {
		return nil, err
	}
	started := time.Now()
	fmt.Printf("failover: standby %s started; killing the leader in %s\n", standbyPod, warm)
	select {
	case <-ctx.Done():
		_ = standby.Stop(10 * time.Second)
		return nil, ctx.Err()
	case <-time.After(warm):
	}
	if done, exitErr := standby.exited(); done {
		return nil, fmt.Errorf("the standby exited: %w\n%s", exitStatus(exitErr), standby.logTail(4000))
	}
	if h := r.holder(ctx); h != operatorPod {
		_ = standby.Stop(10 * time.Second)
		return nil, fmt.Errorf("before the kill the HO's Lease is held by %q, want %s", h, operatorPod)
	}
	res.warm = time.Since(started)
	res.standbyRSS, _, _ = standby.memory()

	res.killed = time.Now()
	if err := r.ho.Signal(syscall.SIGKILL); err != nil {
		_ = standby.Stop(10 * time.Second)
		return nil, fmt.Errorf("failed to kill the leader: %w", err)
	}
	<-r.ho.Done()
	r.ho, r.metricsURL = standby, metricsURL
	fmt.Printf("failover: leader killed (SIGKILL)\n")

	deadline := res.killed.Add(timeout)
	for res.led.IsZero() || res.passDone.IsZero() {
		if time.Now().After(deadline) {
			return nil, r.withLog(fmt.Errorf("failover: %s after the kill the standby led: %t, first pass done: %t (%.0f reconciles)",
				timeout, !res.led.IsZero(), !res.passDone.IsZero(), res.reconciles))
		}
		if done, exitErr := standby.exited(); done {
			return nil, r.withLog(fmt.Errorf("the standby exited after the kill: %w", exitStatus(exitErr)))
		}
		if res.led.IsZero() && r.holder(ctx) == standbyPod {
			res.led = time.Now()
			fmt.Printf("failover: the standby leads %s after the kill\n", res.led.Sub(res.killed).Round(100*time.Millisecond))
		}
		if !res.led.IsZero() {
			if m, err := scrapeMetrics(metricsURL); err == nil {
				res.reconciles, _ = metric(m, "controller_runtime_reconcile_total", hcController)
				depth, _ := metric(m, "workqueue_depth", hcQueue)
				active, _ := metric(m, "controller_runtime_active_workers", hcController)
				if res.reconciles >= float64(len(r.clusters)) && depth == 0 && active == 0 {
					res.passDone = time.Now()
					fmt.Printf("failover: first pass over %d HostedClusters done %s after the standby led (%.0f reconciles)\n",
						len(r.clusters), res.passDone.Sub(res.led).Round(100*time.Millisecond), res.reconciles)
				}
			}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	return res, nil
}

// holder is the HO Lease's holder, "" when unknown.
func (r *hcRun) holder(ctx context.Context) string {
	lease := &coordinationv1.Lease{}
	if err := r.admin.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: hyperv1.HypershiftOperatorLeaseName}, lease); err != nil || lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}

// analyzeFailover counts the HO's requests from the kill to the end of the
// standby's first pass (a second's margin for the audit log's timestamps).
func (res *failoverResult) analyze(ho []auditv1.Event) {
	var requests []auditv1.Event
	for _, e := range between(ho, res.killed, res.passDone.Add(time.Second)) {
		if isElection(e) {
			continue
		}
		requests = append(requests, e)
		if auditlog.IsWrite(e) {
			res.writes = append(res.writes, describe(e))
		}
	}
	res.requests = count(requests)
}

// markdown is the failover step's part of the section.
func (res *failoverResult) markdown(n int, election string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n### Failover: the leader killed (SIGKILL) with %d HostedClusters converged\n\n", n)
	fmt.Fprintf(&b, "A standby replica ran %s before the kill (RSS %s then, its cache filled). The HO's election timings: %s. "+
		"A fence probe (`create services <namespace>/hypershift-fence-probe`) is a dry run as a pod that does not hold the Lease: the fence refuses it and nothing is stored.\n\n",
		res.warm.Round(time.Second), mib(res.standbyRSS), election)
	b.WriteString("| | |\n|---|---|\n")
	fmt.Fprintf(&b, "| the standby leads, after the kill | %.1f s |\n", res.led.Sub(res.killed).Seconds())
	fmt.Fprintf(&b, "| its first pass over every HostedCluster done, after it leads | %.1f s |\n", res.passDone.Sub(res.led).Seconds())
	fmt.Fprintf(&b, "| reconciles in that pass | %.0f |\n", res.reconciles)
	fmt.Fprintf(&b, "| requests from the kill to the end of that pass (without its election Lease) | %d: %s |\n", res.requests.total, res.requests.callSummary())
	fmt.Fprintf(&b, "| writes among them | %d |\n", len(res.writes))
	if len(res.writes) > 0 {
		b.WriteString("\nThe writes (first 20):\n\n```\n")
		for i, w := range res.writes {
			if i == 20 {
				break
			}
			b.WriteString(w + "\n")
		}
		b.WriteString("```\n")
	}
	return b.String()
}

// print writes the failover step's figures to stdout.
func (res *failoverResult) print() {
	fmt.Printf("\nfailover: standby warm %s (RSS %s); leads %.1f s after the kill; first pass %.1f s (%.0f reconciles); %d requests (%s), %d writes\n",
		res.warm.Round(time.Second), mib(res.standbyRSS), res.led.Sub(res.killed).Seconds(), res.passDone.Sub(res.led).Seconds(),
		res.reconciles, res.requests.total, res.requests.callSummary(), len(res.writes))
	for i, w := range res.writes {
		if i == 20 {
			break
		}
		fmt.Println("  " + w)
	}
}

// callSummary is "list deployments 1, get secrets 3, ...", most first.
func (t tally) callSummary() string {
	var parts []string
	for _, call := range sortedKeys(t.calls) {
		parts = append(parts, fmt.Sprintf("%s %d", call, t.calls[call]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
