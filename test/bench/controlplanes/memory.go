package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hypershift-le/hypershift/test/bench/report"
)

// memory is one control plane's memory by component (the app label of its
// pods), in bytes, by two methods in the same moment: the resident memory
// (VmRSS) of each container's process, as earlier runs on the node agent
// reported it, and the working set of each container's cgroup as its
// kubelet reports it (the summary API, what `kubectl top` and the
// kubelet's eviction read).
//
// cpu is, in the same moment, each component's CPU time so far
// (nanoseconds of CPU, the summary API's usageCoreNanoSeconds of each
// container's cgroup): the difference of two readings is what it used in
// between.
type memory struct {
	rss, workingSet, cpu map[string]int64
}

// errNoProcess is returned for a container without a process or figures
// yet (it is being restarted, or its kubelet has not sampled it).
var errNoProcess = errors.New("no process")

// memoryOnceRunning is memoryOf, tried again for up to a minute while a
// container has no process or no figures.
func (b *bench) memoryOnceRunning(ctx context.Context, ns string) (memory, error) {
	deadline := time.Now().Add(time.Minute)
	for {
		m, err := b.memoryOf(ctx, ns)
		if err == nil || !errors.Is(err, errNoProcess) || time.Now().After(deadline) {
			return m, err
		}
		select {
		case <-ctx.Done():
			return memory{}, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// memoryOf measures the pods of the control-plane namespace ns.
func (b *bench) memoryOf(ctx context.Context, ns string) (memory, error) {
	m := memory{rss: map[string]int64{}, workingSet: map[string]int64{}, cpu: map[string]int64{}}
	pods := &corev1.PodList{}
	if err := b.lc.Env.Client.List(ctx, pods, client.InNamespace(ns)); err != nil {
		return m, err
	}
	clientset, err := kubernetes.NewForConfig(b.lc.Env.Config)
	if err != nil {
		return m, err
	}
	summaries := map[string]map[string]containerStats{}
	for _, pod := range pods.Items {
		switch {
		case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
			continue // ended: it holds no memory
		case pod.Spec.NodeName == "" || pod.Status.Phase != corev1.PodRunning:
			return m, fmt.Errorf("%w: pod %s/%s is %s, on node %q", errNoProcess, ns, pod.Name, pod.Status.Phase, pod.Spec.NodeName)
		}
		node := pod.Spec.NodeName
		if _, ok := summaries[node]; !ok {
			s, err := statsOf(ctx, clientset, node)
			if err != nil {
				return m, err
			}
			summaries[node] = s
		}
		for _, c := range pod.Spec.Containers {
			pid, ok := b.lc.PodPID(ctx, ns, pod.Name, c.Name)
			if !ok {
				return m, fmt.Errorf("%w for %s/%s %s", errNoProcess, ns, pod.Name, c.Name)
			}
			rss, err := residentMemory(pid)
			if err != nil {
				return m, err
			}
			st, ok := summaries[node][ns+"/"+pod.Name+"/"+c.Name]
			if !ok || st.workingSet == nil || st.cpu == nil {
				return m, fmt.Errorf("%w: the kubelet of %s reports no working set or CPU for %s/%s %s", errNoProcess, node, ns, pod.Name, c.Name)
			}
			m.rss[pod.Labels["app"]] += rss
			m.workingSet[pod.Labels["app"]] += int64(*st.workingSet)
			m.cpu[pod.Labels["app"]] += int64(*st.cpu)
		}
	}
	return m, nil
}

// summary is the part of the kubelet's summary API
// (/stats/summary, k8s.io/kubelet/pkg/apis/stats/v1alpha1) read here.
type summary struct {
	Pods []struct {
		PodRef struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"podRef"`
		Containers []struct {
			Name   string `json:"name"`
			Memory *struct {
				WorkingSetBytes *uint64 `json:"workingSetBytes"`
			} `json:"memory"`
			CPU *struct {
				UsageCoreNanoSeconds *uint64 `json:"usageCoreNanoSeconds"`
			} `json:"cpu"`
		} `json:"containers"`
	} `json:"pods"`
}

// containerStats is one container's working set and CPU time, nil where
// its kubelet has no figure yet.
type containerStats struct {
	workingSet, cpu *uint64
}

// statsOf reads node's summary through the API server's node proxy, as
// `kubectl get --raw` would, and returns each container's figures by
// namespace/pod/container.
func statsOf(ctx context.Context, cs kubernetes.Interface, node string) (map[string]containerStats, error) {
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", node, "proxy/stats/summary").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("the summary API of node %s: %w", node, err)
	}
	var s summary
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("the summary API of node %s: %w", node, err)
	}
	out := map[string]containerStats{}
	for _, p := range s.Pods {
		for _, c := range p.Containers {
			var st containerStats
			if c.Memory != nil {
				st.workingSet = c.Memory.WorkingSetBytes
			}
			if c.CPU != nil {
				st.cpu = c.CPU.UsageCoreNanoSeconds
			}
			out[p.PodRef.Namespace+"/"+p.PodRef.Name+"/"+c.Name] = st
		}
	}
	return out, nil
}

// residentMemory is a process's VmRSS, in bytes.
func residentMemory(pid int) (int64, error) {
	sizes, err := report.ProcBytes(fmt.Sprintf("/proc/%d/status", pid), "VmRSS")
	if err != nil {
		return 0, err
	}
	return sizes[0], nil
}
