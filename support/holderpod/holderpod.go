// Package holderpod judges, from the pod object a leader-election Lease's
// holderIdentity names, whether the holder's process can still run: the
// rule by which the hypershift-operator releases a control-plane-operator
// Lease whose holder is gone, and by which `hypershift get leaders` shows
// such a holder. The argument for why acting on it is safe is in the
// support/leaderelection package documentation.
package holderpod

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Reasons a holder's pod is gone, as Verdict.Reason gives them.
const (
	// ReasonNotFound: no pod has the holder's name (it was deleted, or
	// never existed).
	ReasonNotFound = "not found"
	// ReasonFailed and ReasonSucceeded: the pod is in a terminal phase;
	// none of its containers runs or will run again.
	ReasonFailed    = "phase Failed"
	ReasonSucceeded = "phase Succeeded"
	// ReasonTerminated: the pod is being deleted and the holder's container
	// has terminated; it is not restarted in a pod being deleted.
	ReasonTerminated = "being deleted, container terminated"
	// ReasonBackOff: the pod runs, but the holder's container exited and
	// the kubelet waits before it starts it again (restart back-off): no
	// process of it runs now, though one may start, under the same
	// identity, when the back-off ends.
	ReasonBackOff = "container exited, waiting to restart"
	// ReasonExited: the pod runs, but the holder's container exited and
	// has not been started again (Verdict.ExitedAt says since when).
	ReasonExited = "container exited, not restarted"
)

// Verdict is what a pod object says of the holder process in it.
type Verdict struct {
	// Gone is true when no process of the holder's container runs in the
	// pod or can run there again.
	Gone bool
	// Stopped is true when the pod is not gone but its kubelet reports
	// that the holder's container exited and waits in restart back-off:
	// no process of it runs now, one may start later.
	Stopped bool
	// ExitedAt, for a pod that is neither gone nor stopped, is when its
	// kubelet reports the holder's container exited, when it reports it
	// exited and not started again (by the node's clock); zero otherwise.
	// The kubelet restarts a container that crashed for the first time at
	// once, so its status reads exited for a moment; one that crashed again
	// soon after waits out a back-off, which the kubelet reports only at
	// its next sync of the pod, about 10s later: until then its status
	// reads exited. How long to wait before counting it stopped is the
	// caller's choice.
	ExitedAt time.Time
	// Reason says why the holder is gone or stopped (one of the Reason
	// constants; for a back-off, with the kubelet's reason in brackets),
	// or, when it is neither, the pod's phase.
	Reason string
}

// Judge returns whether the holder whose pod is pod (nil when no pod has
// the holder's name) is gone: the pod does not exist, is in a terminal
// phase (Succeeded or Failed), or has been marked for deletion and its
// container named container reports that it terminated. A pod whose phase
// is Running, Pending or Unknown, or that is being deleted while the
// container still runs (or reports nothing), holds a holder that may still
// run: a frozen or partitioned process is not gone. Of those, a pod whose
// container exited and waits to be restarted is Stopped: a leader in a
// crash loop.
func Judge(pod *corev1.Pod, container string) Verdict {
	switch {
	case pod == nil:
		return Verdict{Gone: true, Reason: ReasonNotFound}
	case pod.Status.Phase == corev1.PodFailed:
		return Verdict{Gone: true, Reason: ReasonFailed}
	case pod.Status.Phase == corev1.PodSucceeded:
		return Verdict{Gone: true, Reason: ReasonSucceeded}
	case pod.DeletionTimestamp != nil && terminated(pod, container):
		return Verdict{Gone: true, Reason: ReasonTerminated}
	}
	if waiting, ok := backingOff(pod, container); ok && pod.Status.Phase != corev1.PodUnknown {
		if pod.DeletionTimestamp != nil {
			// Not restarted in a pod being deleted.
			return Verdict{Gone: true, Reason: ReasonTerminated}
		}
		return Verdict{Stopped: true, Reason: ReasonBackOff + " (" + waiting + ")"}
	}
	phase := string(pod.Status.Phase)
	if phase == "" {
		phase = string(corev1.PodPending)
	}
	verdict := Verdict{Reason: phase}
	if pod.Status.Phase != corev1.PodUnknown {
		verdict.ExitedAt = exitedAt(pod, container)
	}
	return verdict
}

// exitedAt is when the pod's status says that container terminated, if it
// says so and that it does not run; zero otherwise.
func exitedAt(pod *corev1.Pod, container string) time.Time {
	for _, status := range pod.Status.ContainerStatuses {
		if status.Name == container && status.State.Running == nil && status.State.Terminated != nil {
			return status.State.Terminated.FinishedAt.Time
		}
	}
	return time.Time{}
}

// backingOff reports whether the pod's status says that container ran,
// exited, and now waits to start again, with the kubelet's reason for the
// wait (CrashLoopBackOff, typically). A container that waits but never ran
// (ContainerCreating) or that runs again is not backing off.
func backingOff(pod *corev1.Pod, container string) (string, bool) {
	for _, status := range pod.Status.ContainerStatuses {
		if status.Name == container {
			if status.State.Waiting == nil || status.State.Running != nil || status.LastTerminationState.Terminated == nil {
				return "", false
			}
			reason := status.State.Waiting.Reason
			if reason == "" {
				reason = "no reason given"
			}
			return reason, true
		}
	}
	return "", false
}

// terminated reports whether the pod's status says that container
// terminated and does not run.
func terminated(pod *corev1.Pod, container string) bool {
	for _, status := range pod.Status.ContainerStatuses {
		if status.Name == container {
			return status.State.Terminated != nil && status.State.Running == nil
		}
	}
	return false
}
