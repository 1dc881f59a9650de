package main

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/controllers/hostedcluster"
	"github.com/hypershift-le/hypershift/hypershift-operator/controllers/leasearbiter"
	"github.com/hypershift-le/hypershift/hypershift-operator/rbac"
	"github.com/hypershift-le/hypershift/hypershift-operator/render"
	"github.com/hypershift-le/hypershift/test/testenv"
)

// arbiterUser is the API user of the hypershift-operator's lease arbiter,
// bound to nothing but the operator's ClusterRole.
const arbiterUser = "hypershift-operator"

// clustersNamespace holds the HostedClusters whose control-plane
// namespaces are the pod samples' namespaces.
const clustersNamespace = "election"

// startArbiter runs the hypershift-operator's lease arbiter, with the
// operator's cache options, until ctx ends; the returned channel reports
// how it ended.
func startArbiter(ctx context.Context, env *testenv.Env) (<-chan error, error) {
	cfg, err := env.AddUser(arbiterUser)
	if err != nil {
		return nil, err
	}
	role := rbac.ClusterRole()
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: arbiterUser},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: arbiterUser}},
	}
	for _, obj := range []client.Object{role, binding, render.FencingPolicy(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: clustersNamespace}}} {
		if err := env.Client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("failed to create %s: %w", obj.GetName(), err)
		}
	}
	cacheOptions := hostedcluster.CacheOptions()
	leasearbiter.AddCacheOptions(&cacheOptions)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: env.Scheme, Cache: cacheOptions, Client: hostedcluster.ClientOptions(),
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
	})
	if err != nil {
		return nil, fmt.Errorf("failed to create the arbiter's manager: %w", err)
	}
	arbiter := &leasearbiter.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder(hostedcluster.FieldOwner), Fencing: true}
	if err := arbiter.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("failed to set up the arbiter: %w", err)
	}
	done := make(chan error, 1)
	go func() {
		err := mgr.Start(ctx)
		if errors.Is(err, context.Canceled) {
			err = nil
		}
		done <- err
	}()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return done, fmt.Errorf("the arbiter's caches did not sync: %w", context.Cause(ctx))
	}
	return done, nil
}

// claimNamespace makes g's namespace the control-plane namespace of a
// HostedCluster whose fence is in force, as the hypershift-operator leaves
// it: labelled and annotated, the fencing binding, LeaderFencing=True.
// The candidates are API users, not pods, so the fence judges none of
// them; it is there because the arbiter releases at once only under it.
func (g *group) claimNamespace(ctx context.Context, env *testenv.Env) error {
	name := g.ns[len(clustersNamespace)+1:]
	hc := &hyperv1.HostedCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: clustersNamespace, Name: name},
		Spec: hyperv1.HostedClusterSpec{
			Release:    hyperv1.Release{Image: "example.com/release:4.17.0"},
			Platform:   hyperv1.PlatformSpec{Type: hyperv1.NonePlatform},
			PullSecret: hyperv1.LocalObjectReference{Name: "pull-secret"},
			Services:   hyperv1.NodePortServices("127.0.0.1", 0),
		},
	}
	if hyperv1.ControlPlaneNamespace(hc.Namespace, hc.Name) != g.ns {
		return fmt.Errorf("namespace %s is not the control-plane namespace of %s/%s", g.ns, hc.Namespace, hc.Name)
	}
	if err := env.Client.Create(ctx, hc); err != nil {
		return fmt.Errorf("failed to create HostedCluster %s: %w", name, err)
	}
	hc.Status.Conditions = []metav1.Condition{{Type: hyperv1.LeaderFencing, Status: metav1.ConditionTrue, Reason: "AsExpected", Message: "set by the benchmark", LastTransitionTime: metav1.Now()}}
	if err := env.Client.Status().Update(ctx, hc); err != nil {
		return fmt.Errorf("failed to set the status of HostedCluster %s: %w", name, err)
	}
	if err := env.Client.Create(ctx, render.FencingBinding()); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("failed to bind the fencing policy: %w", err)
	}
	namespace := &corev1.Namespace{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: g.ns}, namespace); err != nil {
		return err
	}
	namespace.Labels[hyperv1.HostedControlPlaneLabel] = "true"
	namespace.Labels[hyperv1.LeaderFencingLabel] = "true"
	namespace.Annotations = map[string]string{hyperv1.ClusterAnnotation: render.ClusterKey(hc)}
	if err := env.Client.Update(ctx, namespace); err != nil {
		return fmt.Errorf("failed to claim namespace %s: %w", g.ns, err)
	}
	for _, user := range g.users {
		if err := createRunningPod(ctx, env, g.ns, user); err != nil {
			return err
		}
	}
	return nil
}

// createRunningPod creates the control-plane-operator pod of a candidate,
// named as its identity, and reports it running, as a kubelet would.
func createRunningPod(ctx context.Context, env *testenv.Env, ns, name string) error {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: leasearbiter.PodLabels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: hyperv1.ControlPlaneOperatorName, Image: "example.com/hypershift:4.17.0"}}},
	}
	if err := env.Client.Create(ctx, pod); err != nil {
		return fmt.Errorf("failed to create pod %s/%s: %w", ns, name, err)
	}
	return setPodPhase(ctx, env, pod, corev1.PodRunning, corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}})
}

func setPodPhase(ctx context.Context, env *testenv.Env, pod *corev1.Pod, phase corev1.PodPhase, state corev1.ContainerState) error {
	return setContainerStatus(ctx, env, pod, phase, corev1.ContainerStatus{State: state})
}

// setContainerStatus reports pod in phase with status as its
// control-plane-operator container's, as a kubelet does.
func setContainerStatus(ctx context.Context, env *testenv.Env, pod *corev1.Pod, phase corev1.PodPhase, status corev1.ContainerStatus) error {
	pod.Status.Phase = phase
	status.Name, status.Image, status.ImageID = hyperv1.ControlPlaneOperatorName, pod.Spec.Containers[0].Image, "example.com/hypershift@sha256:0"
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{status}
	if err := env.Client.Status().Update(ctx, pod); err != nil {
		return fmt.Errorf("failed to set the status of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// makePodGone makes the stopped leader's pod gone, as the sample's kind
// says: force-deleted, or failed; or, for a back-off, reports its
// container exited and waiting to restart, as a kubelet does when a
// container crashes again soon after a restart.
func (g *group) makePodGone(ctx context.Context, env *testenv.Env) error {
	pod := &corev1.Pod{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: g.ns, Name: g.old.user}, pod); err != nil {
		return err
	}
	switch g.kind {
	case kindPodDeleted:
		return env.Client.Delete(ctx, pod, client.GracePeriodSeconds(0))
	case kindBackOff:
		return setContainerStatus(ctx, env, pod, corev1.PodRunning, corev1.ContainerStatus{
			RestartCount:         1,
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "Error"}},
			State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 10s restarting failed container"}},
		})
	}
	return setPodPhase(ctx, env, pod, corev1.PodFailed, corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "Error"}})
}

// leaseOf is the Lease a group campaigns for: the CPO Lease where the
// parent arbitrates, else an unremarkable name.
func (g *group) leaseOf() string {
	if g.podKind() {
		return hyperv1.ControlPlaneOperatorLeaseName
	}
	return leaseName
}

func (g *group) podKind() bool {
	return g.kind == kindPodDeleted || g.kind == kindPodFailed || g.kind == kindBackOff
}
