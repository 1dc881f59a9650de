package component

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/hypershift-le/hypershift/support/podspec"
)

// Spread places the replicas of a component (HighlyAvailable: more than
// one) on different nodes of the management cluster (podspec.Spread), so
// that losing one node loses one etcd member, one kube-apiserver and at
// most one replica of each controller, as HyperShift spreads them across
// zones. Nil for one replica.
func Spread(component string, replicas int32) []corev1.TopologySpreadConstraint {
	return podspec.Spread(Selector(component), replicas)
}
