package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	infrav1 "github.com/hypershift-le/hypershift/api/infrastructure/v1beta1"
	"github.com/hypershift-le/hypershift/test/nodes"
)

// The steps of a pool's first machine, from the NodePool's create request
// to its Node Ready, in the order they happen: where a machine's time goes.
var timelineSteps = []string{
	"MachineDeployment", "MachineSet", "Machine", "PodMachine", "Pod", "Pod scheduled",
	"machine container running", "Node registered", "Node podCIDR", "pod-network Pod", "pod-network running", "Node Ready",
}

// timeline records when each step of pool's first machine was first seen,
// polling every 100 ms until the Node is Ready or ctx ends. Polling
// resolution, not the objects' timestamps (whole seconds), is what it
// measures to.
type timeline struct {
	start time.Time
	seen  map[string]time.Duration
}

func (b *bench) watchTimeline(ctx context.Context, hosted client.Client, pool string, start time.Time) *timeline {
	tl := &timeline{start: start, seen: map[string]time.Duration{}}
	ns := hyperv1.ControlPlaneNamespace(namespace, podClusterName)
	inPool := client.MatchingLabels{hyperv1.NodePoolLabel: pool}
	mark := func(step string) {
		if _, ok := tl.seen[step]; !ok {
			tl.seen[step] = time.Since(start)
		}
	}
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	for {
		if b.timelineStep(ctx, hosted, ns, inPool, mark) {
			return tl
		}
		select {
		case <-ctx.Done():
			return tl
		case <-ticker.C:
		}
	}
}

// timelineStep looks once; it reports whether the Node is Ready.
func (b *bench) timelineStep(ctx context.Context, hosted client.Client, ns string, inPool client.MatchingLabels, mark func(string)) bool {
	c := b.lc.Env.Client
	if l := (&clusterv1.MachineDeploymentList{}); c.List(ctx, l, client.InNamespace(ns), inPool) == nil && len(l.Items) > 0 {
		mark("MachineDeployment")
	}
	if l := (&clusterv1.MachineSetList{}); c.List(ctx, l, client.InNamespace(ns), inPool) == nil && len(l.Items) > 0 {
		mark("MachineSet")
	}
	machines := &clusterv1.MachineList{}
	if c.List(ctx, machines, client.InNamespace(ns), inPool) != nil || len(machines.Items) == 0 {
		return false
	}
	mark("Machine")
	name := machines.Items[0].Spec.InfrastructureRef.Name
	if name == "" {
		return false
	}
	if c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &infrav1.PodMachine{}) == nil {
		mark("PodMachine")
	}
	pod := &corev1.Pod{}
	if c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pod) == nil {
		mark("Pod")
		if pod.Spec.NodeName != "" {
			mark("Pod scheduled")
		}
		for _, s := range pod.Status.ContainerStatuses {
			if s.State.Running != nil {
				mark("machine container running")
			}
		}
	}
	node := &corev1.Node{}
	if hosted.Get(ctx, client.ObjectKey{Name: name}, node) != nil {
		return false
	}
	mark("Node registered")
	if node.Spec.PodCIDR != "" {
		mark("Node podCIDR")
	}
	pods := &corev1.PodList{}
	if hosted.List(ctx, pods, client.InNamespace("kube-system"), client.MatchingLabels{"k8s-app": "pod-network"}) == nil {
		for _, p := range pods.Items {
			if p.Spec.NodeName != name {
				continue
			}
			mark("pod-network Pod")
			for _, s := range p.Status.ContainerStatuses {
				if s.State.Running != nil {
					mark("pod-network running")
				}
			}
		}
	}
	if nodes.Ready(node) {
		mark("Node Ready")
		return true
	}
	return false
}

// String is the timeline on one line, each step with its time from the
// create request and, in parentheses, from the step before.
func (tl *timeline) String() string {
	var parts []string
	var last time.Duration
	for _, step := range timelineSteps {
		at, ok := tl.seen[step]
		if !ok {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %.1fs (+%.1fs)", step, at.Seconds(), (at-last).Seconds()))
		last = at
	}
	return strings.Join(parts, ", ")
}
