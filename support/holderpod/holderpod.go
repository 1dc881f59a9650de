// Package holderpod judges, from the pod object a leader-election Lease's
// holderIdentity names, whether the holder's process can still run: the
// rule by which the hypershift-operator releases a control-plane-operator
// Lease whose holder is gone, and by which `hypershift get leaders` shows
// such a holder. The argument for why acting on it is safe is in the
// support/leaderelection package documentation.
package holderpod

import (
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
)

// Verdict is what a pod object says of the holder process in it.
type Verdict struct {
	// Gone is true when no process of the holder's container runs in the
	// pod or can run there again.
	Gone bool
	// Reason says why the holder is gone (one of the Reason constants),
	// or, when it is not, the pod's phase.
	Reason string
}

// Judge returns whether the holder whose pod is pod (nil when no pod has
// the holder's name) is gone: the pod does not exist, is in a terminal
// phase (Succeeded or Failed), or has been marked for deletion and its
// container named container reports that it terminated. A pod whose phase
// is Running, Pending or Unknown, or that is being deleted while the
// container still runs (or reports nothing), holds a holder that may still
// run: a frozen or partitioned process is not gone.
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
	phase := string(pod.Status.Phase)
	if phase == "" {
		phase = string(corev1.PodPending)
	}
	return Verdict{Reason: phase}
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
