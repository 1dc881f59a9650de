package component

import (
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
)

// DisruptionBudget is the PodDisruptionBudget of component name's pods:
// at most maxUnavailable of them evicted at once (a node drain, a
// management cluster's upgrade), as HyperShift budgets its highly
// available components. A single replica gets none: a budget of one
// unavailable would guard nothing, and one of none would block every
// drain of its node; evicting the only replica is the outage of its node
// either way.
func DisruptionBudget(hcp *hyperv1.HostedControlPlane, name string, maxUnavailable int32) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: policyv1.SchemeGroupVersion.String(), Kind: "PodDisruptionBudget"},
		ObjectMeta: ObjectMeta(hcp, name, name),
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(maxUnavailable)),
			Selector:       &metav1.LabelSelector{MatchLabels: Selector(name)},
			// A pod that is not ready serves nothing the budget guards:
			// evicting it never waits (by default, a crash-looping replica
			// and one more unavailable would hold a drain for good).
			UnhealthyPodEvictionPolicy: ptr.To(policyv1.AlwaysAllow),
		},
	}
}
