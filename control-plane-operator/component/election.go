package component

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// LeaderElection returns the election flags of a hosted controller with
// replicas: with two or more, they elect a leader with a Lease in the
// hosted cluster's kube-system; a single replica does not elect.
func LeaderElection(replicas int32) []string {
	if replicas < 2 {
		return []string{"--leader-elect=false"}
	}
	return []string{"--leader-elect=true", "--leader-elect-resource-lock=leases", "--leader-elect-resource-namespace=kube-system"}
}

// ControllerStrategy rolls a hosted controller: a single replica, which
// does not elect, is recreated so that two never act at once; several go
// one at a time without surge, their Lease keeping one acting.
func ControllerStrategy(replicas int32) appsv1.DeploymentStrategy {
	if replicas < 2 {
		return appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	}
	return appsv1.DeploymentStrategy{
		Type: appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			MaxSurge:       ptr.To(intstr.FromInt32(0)),
		},
	}
}

// SecurePort returns the flags that serve /healthz on the pod's address at
// port, with a certificate the component makes for itself in memory.
func SecurePort(port int32) []string {
	return []string{"--bind-address=$(" + PodIPEnv + ")", fmt.Sprintf("--secure-port=%d", port)}
}
