package nodeagent

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
)

// scheduler binds every Pod that has no node to the agent's node, through
// the pods/binding subresource as kube-scheduler does. Pods come from the
// agent's informer; failed bindings are retried with a back-off.
type scheduler struct {
	agent *Agent
	queue workqueue.TypedRateLimitingInterface[types.NamespacedName]
}

func newScheduler(a *Agent) *scheduler {
	return &scheduler{
		agent: a,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[types.NamespacedName](100*time.Millisecond, 30*time.Second),
			workqueue.TypedRateLimitingQueueConfig[types.NamespacedName]{Name: "nodeagent-scheduler"},
		),
	}
}

// needsBinding reports whether the scheduler should bind pod: it has no
// node, is not being deleted and has no scheduling gates.
func needsBinding(pod *corev1.Pod) bool {
	return pod.Spec.NodeName == "" && pod.DeletionTimestamp == nil && len(pod.Spec.SchedulingGates) == 0
}

func (s *scheduler) enqueue(pod *corev1.Pod) {
	if needsBinding(pod) {
		s.queue.Add(types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name})
	}
}

// run binds queued pods until the queue shuts down.
func (s *scheduler) run(ctx context.Context) {
	for s.next(ctx) {
	}
}

func (s *scheduler) next(ctx context.Context) bool {
	key, quit := s.queue.Get()
	if quit {
		return false
	}
	defer s.queue.Done(key)
	pod, err := s.agent.lister.Pods(key.Namespace).Get(key.Name)
	if err != nil || !needsBinding(pod) {
		s.queue.Forget(key)
		return true
	}
	binding := &corev1.Binding{
		// The UID makes the binding fail if the pod was replaced meanwhile.
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: s.agent.cfg.NodeName},
	}
	err = s.agent.client.CoreV1().Pods(pod.Namespace).Bind(ctx, binding, metav1.CreateOptions{})
	switch {
	case err == nil:
		s.agent.log.V(1).Info("Bound pod", "pod", key, "node", s.agent.cfg.NodeName)
		s.queue.Forget(key)
	case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
		// Bound by someone else, or gone: the informer tells what is next.
		s.queue.Forget(key)
	case ctx.Err() != nil:
	default:
		s.agent.log.Error(err, "Failed to bind pod", "pod", key)
		s.queue.AddRateLimited(key)
	}
	return true
}
