package component

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
)

// Availability is the judgement of one component's readiness.
type Availability struct {
	// Available is true once the workload's rollout is complete.
	Available bool
	// Reason is a CamelCase word for the condition.
	Reason string
	// Message is stable text for the condition.
	Message string
}

// Available judges a component from its live workload (nil when it does
// not exist): available once its controller has observed the latest spec,
// every desired replica runs it and is available, and no replica of an
// older spec is left.
func Available(live client.Object) Availability {
	switch w := live.(type) {
	case *appsv1.Deployment:
		if w == nil {
			return notFound
		}
		// Replicas of an older spec still running (a rolling update's old
		// pod, ready while the new one is not) mean the rollout is not over.
		current := w.Status.Replicas <= w.Status.UpdatedReplicas
		return rollout(w.Generation, w.Status.ObservedGeneration, replicas(w.Spec.Replicas),
			w.Status.UpdatedReplicas, w.Status.AvailableReplicas, current)
	case *appsv1.StatefulSet:
		if w == nil {
			return notFound
		}
		current := w.Status.UpdateRevision == "" || w.Status.CurrentRevision == w.Status.UpdateRevision
		return rollout(w.Generation, w.Status.ObservedGeneration, replicas(w.Spec.Replicas),
			w.Status.UpdatedReplicas, w.Status.AvailableReplicas, current)
	}
	return notFound
}

var notFound = Availability{Reason: hyperv1.WorkloadNotFoundReason, Message: "The workload does not exist yet"}

func rollout(generation, observed int64, want, updated, available int32, current bool) Availability {
	switch {
	case observed < generation:
		return Availability{Reason: hyperv1.RollingOutReason, Message: "The workload's controller has not observed the latest spec yet"}
	case updated < want || !current:
		return Availability{Reason: hyperv1.RollingOutReason, Message: "Not every replica runs the latest spec yet"}
	case available < want:
		return Availability{Reason: hyperv1.ReplicasUnavailableReason, Message: "Not every replica is available yet"}
	}
	return Availability{Available: true, Reason: hyperv1.AsExpectedReason, Message: "Every replica is available"}
}

func replicas(r *int32) int32 {
	if r == nil {
		return 1
	}
	return *r
}

// Claims returns the names of the claims a StatefulSet's pods use, from
// its volumeClaimTemplates (<template>-<set>-<ordinal>), in order; none for
// any other workload.
func Claims(live client.Object) []string {
	set, ok := live.(*appsv1.StatefulSet)
	if !ok || set == nil {
		return nil
	}
	var names []string
	for ordinal := range replicas(set.Spec.Replicas) {
		for _, t := range set.Spec.VolumeClaimTemplates {
			names = append(names, fmt.Sprintf("%s-%s-%d", t.Name, set.Name, ordinal))
		}
	}
	return names
}

// ClaimsUnbound judges a workload whose claims (by name) are not all
// bound: it cannot start until they are.
func ClaimsUnbound(unbound []string) Availability {
	return Availability{Reason: hyperv1.ClaimNotBoundReason, Message: "Claim " + strings.Join(unbound, ", ") + " is not bound to a volume yet: its pod cannot start"}
}
