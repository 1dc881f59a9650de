package nodeagent_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestNodeRegistered(t *testing.T) {
	node := &corev1.Node{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: nodeName}, node); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[corev1.ResourceName]string{corev1.ResourceCPU: "16", corev1.ResourceMemory: "64Gi", corev1.ResourcePods: "250"} {
		for _, list := range []corev1.ResourceList{node.Status.Capacity, node.Status.Allocatable} {
			if got := list[name]; got.Cmp(resource.MustParse(want)) != 0 {
				t.Errorf("%s = %s, want %s", name, got.String(), want)
			}
		}
	}
	found := false
	for _, a := range node.Status.Addresses {
		found = found || (a.Type == corev1.NodeInternalIP && a.Address == "127.0.0.1")
	}
	if !found {
		t.Errorf("no InternalIP 127.0.0.1 among %v", node.Status.Addresses)
	}
	ready := false
	for _, c := range node.Status.Conditions {
		ready = ready || (c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue && !c.LastHeartbeatTime.IsZero())
	}
	if !ready {
		t.Errorf("the node is not Ready with a heartbeat: %+v", node.Status.Conditions)
	}
	if info := node.Status.NodeInfo; info.KubeletVersion == "" || info.OperatingSystem == "" || info.Architecture == "" {
		t.Errorf("nodeInfo is incomplete: %+v", info)
	}
}
