// Creating the HostedClusters and polling until every one is complete,
// the operator's work queue drains and the quiet window passes.

package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/test/bench/report"
)

// create creates the namespaces, then every pull secret and HostedCluster
// with creators concurrent creators, counting created HostedClusters.
func (r *hcRun) create(ctx context.Context, creators int, created *atomic.Int64) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	work := make(chan int)
	var wg sync.WaitGroup
	for range creators {
		wg.Go(func() {
			for i := range work {
				for _, obj := range []client.Object{r.secrets[i], r.clusters[i]} {
					if err := r.admin.Create(ctx, obj.DeepCopyObject().(client.Object)); err != nil {
						cancel(fmt.Errorf("failed to create %T %s/%s: %w", obj, obj.GetNamespace(), obj.GetName(), err))
						return
					}
				}
				created.Add(1)
			}
		})
	}
feed:
	for i := range r.clusters {
		select {
		case work <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	return context.Cause(ctx)
}

// converge creates the HostedClusters and polls until every one has all its
// objects and a complete status, recording the milestones.
func (r *hcRun) converge(ctx context.Context, creators int, every, timeout time.Duration) error {
	for _, ns := range r.namespaces() {
		if err := r.admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("failed to create namespace %s: %w", ns, err)
		}
	}
	n := len(r.clusters)
	var created atomic.Int64
	createDone := make(chan error, 1)
	var err error
	if r.cpuAtFirstCreate, err = r.operatorCPU(); err != nil {
		return fmt.Errorf("failed to read the hypershift-operator's CPU time: %w", err)
	}
	apiserver, err := r.env.Process("kube-apiserver")
	if err != nil {
		return err
	}
	r.apiServerPID = apiserver.Pid
	if r.apiCPUAtFirstCreate, err = report.ProcCPUTime(r.apiServerPID); err != nil {
		return fmt.Errorf("failed to read the kube-apiserver's CPU time: %w", err)
	}
	r.firstCreate = time.Now()
	go func() { createDone <- r.create(ctx, creators, &created) }()
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	deadline := r.firstCreate.Add(timeout)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-createDone:
			if err != nil {
				return err
			}
			r.allCreated = time.Now()
			createDone = nil
			fmt.Printf("[%6.1fs] created %d HostedClusters and their pull secrets\n", r.since(r.allCreated), n)
			continue
		case <-ticker.C:
		}
		if done, exitErr := r.operatorExited(); done {
			return fmt.Errorf("the hypershift-operator exited while converging: %w", exitStatus(exitErr))
		}
		complete, missing, err := r.pollObjects(ctx)
		if err != nil {
			return err
		}
		now := time.Now()
		if complete > 0 && r.firstComplete.IsZero() {
			r.firstComplete = now
		}
		if complete == n && r.allObjects.IsZero() {
			r.allObjects = now
		}
		line := fmt.Sprintf("[%6.1fs] created %d/%d, all objects in place %d/%d", r.since(now), created.Load(), n, complete, n)
		if !r.allObjects.IsZero() {
			settled, pending, err := r.pollStatus(ctx)
			if err != nil {
				return err
			}
			line += fmt.Sprintf(", status complete %d/%d", settled, n)
			if len(pending) > 0 {
				line += " (waiting: " + summarize(pending) + ")"
			}
			if settled+pending[waitingForSilence] == n && r.settledButSilence.IsZero() {
				r.settledButSilence = time.Now()
			}
			if settled == n {
				r.settled = time.Now()
			}
		} else if len(missing) > 0 {
			line += " (missing: " + summarize(missing) + ")"
		}
		if rss, _, err := r.ho.memory(); err == nil {
			line += ", hypershift-operator RSS " + mib(rss)
		}
		fmt.Println(line)
		if !r.settled.IsZero() {
			return nil
		}
		if now.After(deadline) {
			return fmt.Errorf("the HostedClusters did not converge within %s of the first create: %d/%d have all their objects; missing: %s",
				timeout, complete, n, summarize(missing))
		}
	}
}

func (r *hcRun) since(t time.Time) float64 { return t.Sub(r.firstCreate).Seconds() }

// pollObjects lists every kind of object the HO creates and returns how
// many HostedClusters have all of theirs, and how many lack each kind.
func (r *hcRun) pollObjects(ctx context.Context) (complete int, missing map[string]int, err error) {
	have := make([]int, len(r.clusters))
	missing = map[string]int{}
	for _, k := range r.kinds {
		keys, err := k.list(ctx, r.admin)
		if err != nil {
			return 0, nil, err
		}
		found := 0
		for key := range keys {
			if i, ok := r.owner[k.resource+" "+key]; ok {
				have[i]++
				found++
			}
		}
		if found < len(r.clusters) {
			missing[k.kind] = len(r.clusters) - found
		}
	}
	for i := range r.clusters {
		if have[i] == len(r.kinds) {
			complete++
		}
	}
	return complete, missing, nil
}

// pollStatus returns how many HostedClusters report a complete status:
// the finalizer, a successful reconcile of their generation, the release's
// version, the CPO Lease and, with fencing, LeaderFencing=True; and why
// the others do not yet.
func (r *hcRun) pollStatus(ctx context.Context) (int, map[string]int, error) {
	list := &hyperv1.HostedClusterList{}
	if err := r.admin.List(ctx, list); err != nil {
		return 0, nil, fmt.Errorf("failed to list HostedClusters: %w", err)
	}
	ours := map[string]bool{}
	for _, hc := range r.clusters {
		ours[hc.Namespace+"/"+hc.Name] = true
	}
	settled, pending := 0, map[string]int{}
	for i := range list.Items {
		hc := &list.Items[i]
		if !ours[hc.Namespace+"/"+hc.Name] {
			continue
		}
		if why := r.statusPending(hc); why != "" {
			pending[why]++
			continue
		}
		settled++
	}
	return settled, pending, nil
}

func (r *hcRun) statusPending(hc *hyperv1.HostedCluster) string {
	if !controllerutil.ContainsFinalizer(hc, hyperv1.Finalizer) {
		return "finalizer"
	}
	c := meta.FindStatusCondition(hc.Status.Conditions, hyperv1.ReconciliationSucceeded)
	switch {
	case c == nil || c.ObservedGeneration != hc.Generation:
		return hyperv1.ReconciliationSucceeded
	case c.Status != metav1.ConditionTrue:
		return hyperv1.ReconciliationSucceeded + "=" + string(c.Status) + ": " + c.Message
	}
	if hc.Status.Version == nil || hc.Status.Version.Desired.Version != releaseVersion {
		return "version"
	}
	if hc.Status.ControlPlaneOperator == nil {
		return "controlPlaneOperator"
	}
	f := meta.FindStatusCondition(hc.Status.Conditions, hyperv1.LeaderFencing)
	switch {
	case f == nil:
		return hyperv1.LeaderFencing
	case r.fencing && f.Status != metav1.ConditionTrue:
		return hyperv1.LeaderFencing + "=" + string(f.Status) + " (" + f.Reason + "), but the API server can fence"
	case !r.fencing && f.Status == metav1.ConditionTrue:
		return hyperv1.LeaderFencing + "=True, but the API server cannot fence"
	}
	// No control-plane-operator runs here: once its Lease has gone a lease
	// duration without a holder, Available says so, and that is the
	// HostedCluster's last status change.
	if a := meta.FindStatusCondition(hc.Status.Conditions, hyperv1.Available); a == nil || a.Reason != hyperv1.ControlPlaneOperatorSilentReason {
		return waitingForSilence
	}
	return ""
}

// waitingForSilence is why a status that is complete but for the silent
// CPO Lease is pending: no operator may report that before the Lease has
// gone its lease duration unheld, however fast it works.
const waitingForSilence = hyperv1.Available + " (waiting for the silent Lease to show)"

// drain waits until the HO's work queue is empty and no reconcile runs:
// the reconciles the last creates and status writes caused are done. It
// returns the metrics then.
func (r *hcRun) drain(ctx context.Context, timeout time.Duration) (map[string]float64, error) {
	deadline := time.Now().Add(timeout)
	for {
		m, err := r.scrapeOperators()
		if err != nil {
			return nil, fmt.Errorf("failed to read the hypershift-operator's metrics: %w", err)
		}
		depth, ok1 := metric(m, "workqueue_depth", hcQueue)
		active, ok2 := metric(m, "controller_runtime_active_workers", hcController)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("the hypershift-operator's metrics lack workqueue_depth or controller_runtime_active_workers of the hostedcluster controller")
		}
		if depth == 0 && active == 0 {
			r.drained = time.Now()
			fmt.Printf("[%6.1fs] the hypershift-operator's work queue is empty\n", r.since(r.drained))
			return m, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the hypershift-operator's work queue did not drain within %s of the last status: depth %.0f, %.0f reconciles running (%s)",
				timeout, depth, active, queueDiagnosis(m))
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// queueDiagnosis says, from the HO's metrics, what keeps its queue full:
// how many reconciles ran and how long they took on average, how many
// items were added, and how many requests it sent and how long they took.
func queueDiagnosis(m map[string]float64) string {
	reconciles, _ := metric(m, "controller_runtime_reconcile_total", hcController)
	seconds, _ := metric(m, "controller_runtime_reconcile_time_seconds_sum", hcController)
	adds, _ := metric(m, "workqueue_adds_total", hcQueue)
	requests, _ := metric(m, "rest_client_requests_total")
	latency, _ := metric(m, "rest_client_request_duration_seconds_sum")
	latencyCount, _ := metric(m, "rest_client_request_duration_seconds_count")
	return fmt.Sprintf("reconciles %.0f, %.3f s each on average; queue adds %.0f; requests %.0f, %.3f s each on average",
		reconciles, seconds/max(reconciles, 1), adds, requests, latency/max(latencyCount, 1))
}

// quiet waits out the quiet window, checking that the HO runs, then that
// every object is still in place.
func (r *hcRun) quiet(ctx context.Context, window time.Duration) error {
	var err error
	if r.cpuAtQuietStart, err = r.operatorCPU(); err != nil {
		return fmt.Errorf("failed to read the hypershift-operator's CPU time: %w", err)
	}
	if r.apiCPUAtQuietStart, err = report.ProcCPUTime(r.apiServerPID); err != nil {
		return fmt.Errorf("failed to read the kube-apiserver's CPU time: %w", err)
	}
	if r.apiRSS, r.apiHWM, err = procMemory(r.apiServerPID); err != nil {
		return fmt.Errorf("failed to read the kube-apiserver's memory: %w", err)
	}
	r.quietStart = time.Now()
	end := r.quietStart.Add(window)
	fmt.Printf("[%6.1fs] converged; counting the hypershift-operator's writes for %s\n", r.since(r.quietStart), window)
	for time.Now().Before(end) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(10*time.Second, time.Until(end))):
		}
		if done, exitErr := r.operatorExited(); done {
			return fmt.Errorf("the hypershift-operator exited while converged: %w", exitStatus(exitErr))
		}
		if rss, _, err := r.ho.memory(); err == nil {
			fmt.Printf("[%6.1fs] quiet window: %s left, hypershift-operator RSS %s\n", r.since(time.Now()), time.Until(end).Round(time.Second), mib(rss))
		}
	}
	r.quietEnd = time.Now()
	if r.cpuAtQuietEnd, err = r.operatorCPU(); err != nil {
		return fmt.Errorf("failed to read the hypershift-operator's CPU time: %w", err)
	}
	complete, missing, err := r.pollObjects(ctx)
	if err != nil {
		return err
	}
	if complete != len(r.clusters) {
		return fmt.Errorf("after the quiet window only %d/%d HostedClusters have all their objects; missing: %s", complete, len(r.clusters), summarize(missing))
	}
	return nil
}

// summarize is "a: 3, b: 1", largest first.
func summarize(m map[string]int) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s: %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
