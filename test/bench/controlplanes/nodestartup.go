package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// nodeStartup is how soon the local cluster's real nodes serve.
type nodeStartup struct {
	// ready is each node's time from its first process's start to the
	// API server showing it Ready; all is from the first node's start to
	// the last one Ready (they start side by side).
	ready []time.Duration
	all   time.Duration
	// onePod is from a pod's create request to its container reported
	// running, alone on the first node; perNode the same with one pod per
	// node created at once, and allPods until the last of them runs.
	onePod, allPods time.Duration
	perNode         []time.Duration
}

// measureNodes reads the nodes' start-up and times pods on them.
func (b *bench) measureNodes(ctx context.Context) (*nodeStartup, error) {
	res := &nodeStartup{}
	first, last := b.lc.Nodes[0].Started, b.lc.Nodes[0].Ready
	for _, n := range b.lc.Nodes {
		res.ready = append(res.ready, n.Ready.Sub(n.Started))
		first, last = minTime(first, n.Started), maxTime(last, n.Ready)
	}
	res.all = last.Sub(first)
	var err error
	if res.onePod, err = b.podToRunning(ctx, "startup-alone", b.lc.Nodes[0].Name); err != nil {
		return res, err
	}
	res.perNode = make([]time.Duration, len(b.lc.Nodes))
	errs := make([]error, len(b.lc.Nodes))
	var wg sync.WaitGroup
	for i, n := range b.lc.Nodes {
		wg.Go(func() { res.perNode[i], errs[i] = b.podToRunning(ctx, "startup-"+n.Name, n.Name) })
	}
	wg.Wait()
	res.allPods = slices.Max(res.perNode)
	for _, err := range errs {
		if err != nil {
			return res, err
		}
	}
	fmt.Printf("nodes Ready %v after their start (all %s); a pod runs %s after its create (one per node at once: %v)\n",
		res.ready, res.all.Round(10*time.Millisecond), res.onePod.Round(10*time.Millisecond), res.perNode)
	return res, nil
}

// podToRunning creates a pod of the pause image (on every node already,
// for sandboxes: no pull is timed) for node, through the scheduler, and
// returns the time from the create request to its container reported
// running; the pod is deleted after.
func (b *bench) podToRunning(ctx context.Context, name, node string) (time.Duration, error) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: corev1.PodSpec{
			NodeSelector:                  map[string]string{corev1.LabelHostname: node},
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers:                    []corev1.Container{{Name: "pause", Image: b.lc.Registry.Image("pause", "latest")}},
		},
	}
	created := time.Now()
	if err := b.lc.Env.Client.Create(ctx, pod); err != nil {
		return 0, err
	}
	defer func() { _ = b.lc.Env.Client.Delete(context.WithoutCancel(ctx), pod) }()
	deadline := created.Add(time.Minute)
	for {
		got := &corev1.Pod{}
		if err := b.lc.Env.Client.Get(ctx, client.ObjectKeyFromObject(pod), got); err != nil {
			return 0, err
		}
		if cs := got.Status.ContainerStatuses; len(cs) == 1 && cs[0].State.Running != nil {
			return time.Since(created), nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("pod %s on %s does not run a minute after its create: %+v", name, node, got.Status)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// markdown reports the nodes' start-up.
func (r *nodeStartup) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "The local cluster's %d real nodes (test/nodes: containerd and a kubelet each, in a network namespace of its own, "+
		"joined to the management API server), started side by side by the same run. A node's start is its first process's "+
		"(containerd's), Ready is the API server showing the Node Ready (polled every 250ms). A pod's time is from its create "+
		"request to its container reported running (polled every 50ms), through the scheduler, with an image the node has "+
		"(the pause image its sandboxes use: no pull is timed).\n\n", len(r.ready))
	b.WriteString("| | p50 | max |\n|---|---|---|\n")
	fmt.Fprintf(&b, "| node: process start to Ready, each node | %s | %s |\n", p50(r.ready), maxOf(r.ready))
	fmt.Fprintf(&b, "| all nodes: first start to last Ready | %s | |\n", r.all.Round(100*time.Millisecond))
	fmt.Fprintf(&b, "| pod create to container running, alone on one node | %s | |\n", r.onePod.Round(100*time.Millisecond))
	fmt.Fprintf(&b, "| pod create to container running, one pod per node at once | %s | %s |\n", p50(r.perNode), maxOf(r.perNode))
	return b.String()
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
