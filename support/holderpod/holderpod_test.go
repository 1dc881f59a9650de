package holderpod

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestJudge(t *testing.T) {
	const container = "control-plane-operator"
	now := metav1.Now()
	pod := func(phase corev1.PodPhase, deleting bool, states ...corev1.ContainerStatus) *corev1.Pod {
		p := &corev1.Pod{Status: corev1.PodStatus{Phase: phase, ContainerStatuses: states}}
		if deleting {
			p.DeletionTimestamp = &now
		}
		return p
	}
	running := corev1.ContainerStatus{Name: container, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	finished := metav1.NewTime(time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC))
	exited := corev1.ContainerStatus{Name: container, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, FinishedAt: finished}}}
	sidecarExited := corev1.ContainerStatus{Name: "sidecar", State: exited.State}
	backOff := corev1.ContainerStatus{Name: container, RestartCount: 2,
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		LastTerminationState: exited.State}
	creating := corev1.ContainerStatus{Name: container, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}
	sidecarBackOff := backOff
	sidecarBackOff.Name = "sidecar"
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want Verdict
	}{
		{"when no pod has the holder's name, the holder is gone", nil, Verdict{Gone: true, Reason: ReasonNotFound}},
		{"when the pod failed, the holder is gone", pod(corev1.PodFailed, false, exited), Verdict{Gone: true, Reason: ReasonFailed}},
		{"when the pod succeeded, the holder is gone", pod(corev1.PodSucceeded, false), Verdict{Gone: true, Reason: ReasonSucceeded}},
		{"when the pod is being deleted and the container terminated, the holder is gone", pod(corev1.PodRunning, true, exited), Verdict{Gone: true, Reason: ReasonTerminated}},
		{"when the pod runs, the holder may run", pod(corev1.PodRunning, false, running), Verdict{Reason: "Running"}},
		{"when the container crashed in a running pod, the kubelet restarts it: the holder may run, exited since it finished", pod(corev1.PodRunning, false, exited), Verdict{Reason: "Running", ExitedAt: finished.Time}},
		{"when the node lost contact, an exit it last reported says nothing of now", pod(corev1.PodUnknown, false, exited), Verdict{Reason: "Unknown"}},
		{"when the pod is being deleted and the container still runs, the holder may run", pod(corev1.PodRunning, true, running), Verdict{Reason: "Running"}},
		{"when the pod is being deleted and only another container terminated, the holder may run", pod(corev1.PodRunning, true, sidecarExited), Verdict{Reason: "Running"}},
		{"when the pod is being deleted and reports no container, the holder may run", pod(corev1.PodRunning, true), Verdict{Reason: "Running"}},
		{"when the container exited and waits in back-off, the holder is stopped", pod(corev1.PodRunning, false, backOff), Verdict{Stopped: true, Reason: ReasonBackOff + " (CrashLoopBackOff)"}},
		{"when the container waits but never ran, the holder may run", pod(corev1.PodPending, false, creating), Verdict{Reason: "Pending"}},
		{"when only another container backs off, the holder may run", pod(corev1.PodRunning, false, sidecarBackOff, running), Verdict{Reason: "Running"}},
		{"when the node lost contact, a back-off it last reported says nothing of now", pod(corev1.PodUnknown, false, backOff), Verdict{Reason: "Unknown"}},
		{"when the pod is being deleted and its container backs off, it is not restarted: the holder is gone", pod(corev1.PodRunning, true, backOff), Verdict{Gone: true, Reason: ReasonTerminated}},
		{"when the node lost contact, the holder may run", pod(corev1.PodUnknown, false, running), Verdict{Reason: "Unknown"}},
		{"when the pod has no phase yet, it is pending", pod("", false), Verdict{Reason: "Pending"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Judge(tc.pod, container); got != tc.want {
				t.Errorf("Judge = %+v, want %+v", got, tc.want)
			}
		})
	}
}
