// Package pods runs the real nodes' test pods: restricted as the control
// plane's pods are, waited for until a phase, their logs read through the
// API server and the kubelet (as kubectl logs reads them).
package pods

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hypershift-le/hypershift/support/testutil"
)

// New is a pod running command in image, restricted (non-root, no
// capabilities, RuntimeDefault seccomp), never restarted, on node unless
// node is empty (the scheduler picks), labeled app=name.
func New(namespace, name, node, image string, command ...string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{
			NodeName:      node,
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: name, Image: image, Command: command,
				SecurityContext: &corev1.SecurityContext{RunAsNonRoot: ptr.To(true), AllowPrivilegeEscalation: ptr.To(false),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}, SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			}},
		},
	}
}

// Run creates pod and waits until it is in phase (Running: with an
// address); it fails the test when the pod fails unasked. It returns the
// pod as it is then.
func Run(t *testing.T, c client.Client, pod *corev1.Pod, phase corev1.PodPhase) *corev1.Pod {
	t.Helper()
	if err := c.Create(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	got := &corev1.Pod{}
	testutil.Eventually(t, 90*time.Second, func() error {
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(pod), got); err != nil {
			return err
		}
		if got.Status.Phase == corev1.PodFailed && phase != corev1.PodFailed {
			t.Fatalf("pod %s failed: %+v", pod.Name, got.Status.ContainerStatuses)
		}
		if got.Status.Phase != phase || (phase == corev1.PodRunning && got.Status.PodIP == "") {
			return fmt.Errorf("pod %s: %s %+v %+v", pod.Name, got.Status.Phase, got.Status.Conditions, got.Status.ContainerStatuses)
		}
		return nil
	})
	return got
}

// Log is the log of the pod's first container, through the API server and
// the kubelet.
func Log(t *testing.T, cfg *rest.Config, pod *corev1.Pod) string {
	t.Helper()
	clientset, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	log, err := clientset.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(t.Context())
	if err != nil {
		t.Fatalf("the log of pod %s: %v", pod.Name, err)
	}
	return string(log)
}

// Ready reports whether the pod's Ready condition is True.
func Ready(pod *corev1.Pod) bool {
	for _, cond := range pod.Status.Conditions {
		if cond.Type == corev1.PodReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}
