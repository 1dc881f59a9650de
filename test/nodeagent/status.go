package nodeagent

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// statusLocked returns the status the pod should have, starting from what
// it has (so that fields the agent does not manage stay as they are). The
// caller holds p.mu. Every time in it is cut to seconds, as the API stores
// it, so that comparing it with the stored status finds no change when
// there is none.
func (p *podRuntime) statusLocked(pod *corev1.Pod, now metav1.Time) *corev1.PodStatus {
	status := pod.Status.DeepCopy()
	status.HostIP, status.HostIPs = hostIP, []corev1.HostIP{{IP: hostIP}}
	if p.ip != "" {
		status.PodIP, status.PodIPs = p.ip, []corev1.PodIP{{IP: p.ip}}
	}
	status.StartTime = ptr.To(p.startTime)
	status.Phase = p.phaseLocked()

	images := map[string]string{}
	for _, c := range pod.Spec.Containers {
		images[c.Name] = c.Image
	}
	status.ContainerStatuses = make([]corev1.ContainerStatus, 0, len(p.containers))
	var unready []string
	for _, c := range p.containers {
		cs := corev1.ContainerStatus{
			Name:                 c.spec.Name,
			Image:                images[c.spec.Name],
			ImageID:              "",
			Ready:                c.ready,
			Started:              ptr.To(c.started),
			RestartCount:         c.restartCount,
			State:                *c.state.DeepCopy(),
			LastTerminationState: *c.lastState.DeepCopy(),
		}
		if c.state.Waiting == nil {
			cs.ContainerID = c.containerID
		}
		status.ContainerStatuses = append(status.ContainerStatuses, cs)
		if !c.ready {
			unready = append(unready, c.spec.Name)
		}
	}

	containersReady := condition(corev1.ContainersReady, len(unready) == 0, "ContainersNotReady",
		fmt.Sprintf("containers with unready status: [%s]", strings.Join(unready, " ")))
	ready := containersReady
	ready.Type = corev1.PodReady
	if len(unready) == 0 {
		// Readiness gates: conditions others set on the pod.
		for _, gate := range pod.Spec.ReadinessGates {
			if !conditionTrue(pod.Status.Conditions, gate.ConditionType) {
				ready = condition(corev1.PodReady, false, "ReadinessGatesNotReady",
					fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist or is not True", gate.ConditionType))
				break
			}
		}
	}
	if status.Phase == corev1.PodSucceeded || status.Phase == corev1.PodFailed {
		containersReady = condition(corev1.ContainersReady, false, "PodCompleted", "")
		ready = condition(corev1.PodReady, false, "PodCompleted", "")
	}
	for _, c := range []corev1.PodCondition{
		condition(corev1.PodReadyToStartContainers, p.ipErr == nil, "", ""),
		condition(corev1.PodInitialized, true, "", ""),
		ready,
		containersReady,
		condition(corev1.PodScheduled, true, "", ""),
	} {
		status.Conditions = setCondition(status.Conditions, c, now)
	}
	return status
}

// phaseLocked: Pending until every container started once; Succeeded or
// Failed once every container ended for good; Running otherwise.
func (p *podRuntime) phaseLocked() corev1.PodPhase {
	allStarted, allFinal, failed := true, true, false
	for _, c := range p.containers {
		allStarted = allStarted && c.everStarted
		allFinal = allFinal && c.final
		if c.final && (c.state.Terminated == nil || c.state.Terminated.ExitCode != 0) {
			failed = true
		}
	}
	switch {
	case len(p.containers) > 0 && allFinal && failed:
		return corev1.PodFailed
	case len(p.containers) > 0 && allFinal:
		return corev1.PodSucceeded
	case allStarted && p.ipErr == nil:
		return corev1.PodRunning
	}
	return corev1.PodPending
}

func condition(t corev1.PodConditionType, ok bool, reason, message string) corev1.PodCondition {
	if ok {
		return corev1.PodCondition{Type: t, Status: corev1.ConditionTrue}
	}
	return corev1.PodCondition{Type: t, Status: corev1.ConditionFalse, Reason: reason, Message: message}
}

func conditionTrue(conditions []corev1.PodCondition, t corev1.PodConditionType) bool {
	for _, c := range conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// setCondition sets c in place of the condition of its type, keeping the
// old transition time when the status did not change, or appends it.
func setCondition(conditions []corev1.PodCondition, c corev1.PodCondition, now metav1.Time) []corev1.PodCondition {
	for i := range conditions {
		old := &conditions[i]
		if old.Type != c.Type {
			continue
		}
		if old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message {
			return conditions
		}
		c.LastTransitionTime = now
		if old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		}
		c.LastProbeTime = old.LastProbeTime
		c.ObservedGeneration = old.ObservedGeneration
		conditions[i] = c
		return conditions
	}
	c.LastTransitionTime = now
	return append(conditions, c)
}
