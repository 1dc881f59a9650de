package nodeagent

import (
	"context"
	"fmt"
	"runtime"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// heartbeatPeriod is how often the Node's Ready condition is refreshed; the
// node lifecycle controller's default grace is 40s.
const heartbeatPeriod = 20 * time.Second

// hostIP is the node's address, the one all processes share.
const hostIP = "127.0.0.1"

// registerNode creates the Node when missing and reports it Ready.
func (a *Agent) registerNode(ctx context.Context) error {
	if info, err := a.client.Discovery().ServerVersion(); err == nil {
		a.kubeletVersion = info.GitVersion
	} else {
		a.kubeletVersion = "v0.0.0-nodeagent"
	}
	if err := a.updateNodeStatus(ctx); err != nil {
		return fmt.Errorf("nodeagent: failed to register node %s: %w", a.cfg.NodeName, err)
	}
	a.log.Info("Registered node", "node", a.cfg.NodeName)
	return nil
}

// heartbeat keeps the Ready condition's heartbeat fresh until ctx ends,
// recreating the Node if someone deleted it.
func (a *Agent) heartbeat(ctx context.Context) {
	timer := time.NewTimer(heartbeatPeriod)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		next := heartbeatPeriod
		if err := a.updateNodeStatus(ctx); err != nil && ctx.Err() == nil {
			a.log.Error(err, "Failed to update the node's status", "node", a.cfg.NodeName)
			next = heartbeatPeriod / 4
		}
		timer.Reset(next)
	}
}

func (a *Agent) updateNodeStatus(ctx context.Context) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := a.client.CoreV1().Nodes().Get(ctx, a.cfg.NodeName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			node, err = a.client.CoreV1().Nodes().Create(ctx, a.newNode(), metav1.CreateOptions{})
		}
		if err != nil {
			return err
		}
		node.Status = a.nodeStatus(node.Status, metav1.Now().Rfc3339Copy())
		_, err = a.client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
		return err
	})
}

func (a *Agent) newNode() *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name: a.cfg.NodeName,
		Labels: map[string]string{
			corev1.LabelHostname:   a.cfg.NodeName,
			corev1.LabelOSStable:   runtime.GOOS,
			corev1.LabelArchStable: runtime.GOARCH,
		},
	}}
}

// nodeStatus returns the node's status at now, keeping the transition
// times of conditions whose status did not change.
func (a *Agent) nodeStatus(old corev1.NodeStatus, now metav1.Time) corev1.NodeStatus {
	resources := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("16"),
		corev1.ResourceMemory: resource.MustParse("64Gi"),
		corev1.ResourcePods:   resource.MustParse("250"),
	}
	conditions := []corev1.NodeCondition{
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", Message: "node agent has sufficient memory available"},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", Message: "node agent has no disk pressure"},
		{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID", Message: "node agent has sufficient PID available"},
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "node agent is posting ready status"},
	}
	for i := range conditions {
		c := &conditions[i]
		c.LastHeartbeatTime, c.LastTransitionTime = now, now
		for _, prev := range old.Conditions {
			if prev.Type == c.Type && prev.Status == c.Status {
				c.LastTransitionTime = prev.LastTransitionTime
			}
		}
	}
	status := old.DeepCopy()
	status.Capacity = resources
	status.Allocatable = resources.DeepCopy()
	status.Conditions = conditions
	status.Addresses = []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: hostIP},
		{Type: corev1.NodeHostName, Address: a.cfg.NodeName},
	}
	status.NodeInfo = corev1.NodeSystemInfo{
		MachineID:               "nodeagent-" + a.cfg.NodeName,
		SystemUUID:              "nodeagent-" + a.cfg.NodeName,
		BootID:                  "nodeagent-" + a.cfg.NodeName,
		KernelVersion:           "local",
		OSImage:                 "local processes",
		ContainerRuntimeVersion: "process://0.1.0",
		KubeletVersion:          a.kubeletVersion,
		OperatingSystem:         runtime.GOOS,
		Architecture:            runtime.GOARCH,
	}
	return *status
}
