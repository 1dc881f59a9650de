package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/test/auditlog"
)

// results are what one run measured.
type results struct {
	sequential, concurrent []time.Duration
	// timelines are the sequential clusters' steps.
	timelines []timeline
	// concurrentAll is from the first create to the last cluster serving.
	concurrentAll time.Duration
	// memory is each concurrent control plane's memory by component.
	memory []memory
	// writes are the control-plane-operators' writes in the quiet window,
	// leases the Lease writes among them, over quietFor.
	writes, leases int
	writeSamples   []string
	quietFor       time.Duration
	clusters       int
	// cpuSteady is each concurrent control plane's CPU time by component
	// over the quiet window (nanoseconds).
	cpuSteady []memory
	// restarts are the concurrent clusters' container restarts by
	// component, counted at the end.
	restarts       map[string]int32
	restartSamples []string
}

// measure runs the sequential and the concurrent creations, then the
// memory and the quiet window.
func (b *bench) measure(ctx context.Context) (*results, error) {
	res := &results{}
	for i := range *sequential {
		name := fmt.Sprintf("one-%d", i)
		created, err := b.create(ctx, name)
		if err != nil {
			return res, err
		}
		took, err := b.timeToAPI(ctx, name, created)
		if err != nil {
			return res, err
		}
		fmt.Printf("%s serves after %s\n", name, took.Round(10*time.Millisecond))
		res.sequential = append(res.sequential, took)
		steps, err := b.timelineOf(name, created, took)
		if err != nil {
			return res, err
		}
		res.timelines = append(res.timelines, steps)
		if err := b.destroy(ctx, name); err != nil {
			return res, err
		}
	}
	fmt.Print(timelineMarkdown(res.timelines))
	if *concurrent == 0 {
		return res, nil
	}
	names, err := b.createAtOnce(ctx, res)
	if err != nil {
		return res, err
	}
	for _, name := range names {
		m, err := b.memoryOnceRunning(ctx, hyperv1.ControlPlaneNamespace(namespace, name))
		if err != nil {
			return res, err
		}
		res.memory = append(res.memory, m)
	}
	fmt.Printf("waiting %s, then counting writes for %s\n", *settle, *quiet)
	err = b.countWrites(ctx, res, names)
	res.restarts, res.restartSamples = b.restarts(ctx, names)
	return res, err
}

// restarts counts the container restarts in the concurrent clusters'
// control-plane namespaces by component (the app label), with up to five
// examples of the last termination's reason.
func (b *bench) restarts(ctx context.Context, names []string) (map[string]int32, []string) {
	out := map[string]int32{}
	var samples []string
	for _, name := range names {
		pods := &corev1.PodList{}
		ns := hyperv1.ControlPlaneNamespace(namespace, name)
		if err := b.lc.Env.Client.List(ctx, pods, client.InNamespace(ns)); err != nil {
			samples = append(samples, fmt.Sprintf("%s: %v", ns, err))
			continue
		}
		for _, pod := range pods.Items {
			for _, cs := range pod.Status.ContainerStatuses {
				if cs.RestartCount == 0 {
					continue
				}
				out[pod.Labels["app"]] += cs.RestartCount
				if t := cs.LastTerminationState.Terminated; t != nil && len(samples) < 5 {
					samples = append(samples, fmt.Sprintf("%s/%s %s exited %d (%s)", ns, pod.Name, cs.Name, t.ExitCode, t.Reason))
				}
			}
		}
	}
	return out, samples
}

// createAtOnce creates the concurrent clusters together and times each.
func (b *bench) createAtOnce(ctx context.Context, res *results) ([]string, error) {
	names := make([]string, *concurrent)
	took := make([]time.Duration, *concurrent)
	errs := make([]error, *concurrent)
	first := time.Now()
	var wg sync.WaitGroup
	for i := range names {
		names[i] = fmt.Sprintf("many-%d", i)
		wg.Go(func() {
			created, err := b.create(ctx, names[i])
			if err == nil {
				took[i], err = b.timeToAPI(ctx, names[i], created)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	res.concurrentAll = time.Since(first)
	res.concurrent = took
	res.clusters = len(names)
	fmt.Printf("%d clusters created at once all serve after %s\n", len(names), res.concurrentAll.Round(10*time.Millisecond))
	return names, errors.Join(errs...)
}

// countWrites counts, from the audit log, the successful writes of every
// control-plane-operator in the quiet window.
//
// It also reads every concurrent control plane's CPU time when the window
// opens and when it closes: what each component used, once converged.
func (b *bench) countWrites(ctx context.Context, res *results, names []string) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(*settle):
	}
	from := time.Now()
	before, err := b.cpuTimes(ctx, names)
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(*quiet):
	}
	to := time.Now()
	res.quietFor = to.Sub(from)
	after, err := b.cpuTimes(ctx, names)
	if err != nil {
		return err
	}
	for i := range names {
		used := map[string]int64{}
		for app, ns := range after[i] {
			used[app] = ns - before[i][app]
		}
		res.cpuSteady = append(res.cpuSteady, memory{cpu: used})
	}
	events, err := b.lc.Env.AuditEvents()
	if err != nil {
		return err
	}
	for _, e := range events {
		at := e.RequestReceivedTimestamp.Time
		if !strings.HasSuffix(e.User.Username, ":"+hyperv1.ControlPlaneOperatorName) || !auditlog.IsWrite(e) || !auditlog.Succeeded(e) ||
			e.ObjectRef == nil || at.Before(from) || at.After(to) {
			continue
		}
		if e.ObjectRef.Resource == "leases" {
			res.leases++
			continue
		}
		res.writes++
		if len(res.writeSamples) < 5 {
			res.writeSamples = append(res.writeSamples, fmt.Sprintf("%s %s %s/%s", e.Verb, e.ObjectRef.Resource, e.ObjectRef.Namespace, e.ObjectRef.Name))
		}
	}
	if res.writes > 0 {
		return fmt.Errorf("the converged control-plane-operators wrote %d times in %s, e.g. %v", res.writes, res.quietFor.Round(time.Second), res.writeSamples)
	}
	return nil
}

// cpuTimes reads each named cluster's CPU time so far by component.
func (b *bench) cpuTimes(ctx context.Context, names []string) ([]map[string]int64, error) {
	out := make([]map[string]int64, len(names))
	for i, name := range names {
		m, err := b.memoryOnceRunning(ctx, hyperv1.ControlPlaneNamespace(namespace, name))
		if err != nil {
			return nil, err
		}
		out[i] = m.cpu
	}
	return out, nil
}
