// Package component is the contract every hosted control plane component
// keeps with the control-plane-operator, and the pieces components share.
//
// A component is a small package that says three things:
//
//   - what it renders from its Inputs: its Services, from the
//     HostedControlPlane alone, so that their addresses are known before
//     anything else renders; and its Workload, the Deployment or StatefulSet
//     that runs it with whatever goes with it (a PodDisruptionBudget);
//   - what it depends on: the components whose workloads must be available
//     before its own workload is applied or changed, which orders the
//     rollout of a new release;
//   - how its readiness is judged: by Available, from the live workload's
//     rollout (its controller observed the latest spec, and every replica
//     runs it and is available).
//
// The control-plane-operator knows components only through this contract:
// it never branches on a component's name.
package component

import (
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/releaseinfo"
)

// Component is one hosted control plane component.
type Component interface {
	// Name names the component: its workload, the app label of its pods
	// and its <Name>Available condition.
	Name() string
	// DependsOn names the components whose workloads must be available
	// before this component's workload is applied or changed.
	DependsOn() []string
	// Services renders the component's Services, from the
	// HostedControlPlane alone.
	Services(hcp *hyperv1.HostedControlPlane) []*corev1.Service
	// Workload renders what runs the component.
	Workload(in Inputs) (*Workload, error)
}

// EarlyStarter is implemented by a component that, on a control plane's
// first start, is created as soon as the workloads it depends on are
// written rather than once they have rolled out: one that retries its
// dependencies until they serve, and whose own start-up is on the way to
// a working API, so that it overlaps theirs. The others wait as on every
// later change: a controller started before the kube-apiserver serves
// exits and is restarted with a back-off, and takes CPU from the
// kube-apiserver when many control planes start at once.
type EarlyStarter interface {
	StartsWithDependencies() bool
}

// Workload is what runs a component.
type Workload struct {
	// Object is an *appsv1.Deployment or an *appsv1.StatefulSet; its
	// rollout is the component's availability.
	Object client.Object
	// Extras are applied before Object, so that what its pods mount
	// exists when they start: a ConfigMap, a PodDisruptionBudget.
	Extras []client.Object
}

// Inputs is everything a component's workload derives from.
type Inputs struct {
	// HostedControlPlane is the control plane being rendered.
	HostedControlPlane *hyperv1.HostedControlPlane
	// Release is the release payload the images come from.
	Release *releaseinfo.ReleaseImage
	// ClusterIPs are the live ClusterIPs of the control plane's Services,
	// by Service name: components reach each other by address, without
	// cluster DNS.
	ClusterIPs map[string]string
	// SecretHashes are pki.Hash of the control plane's Secrets, by name.
	SecretHashes map[string]string
}
