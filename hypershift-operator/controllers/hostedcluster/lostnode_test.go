package hostedcluster_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/controllers/hostedcluster"
	"github.com/hypershift-le/hypershift/hypershift-operator/nodeheartbeat"
	"github.com/hypershift-le/hypershift/support/podspec"
	"github.com/hypershift-le/hypershift/support/testutil"
)

var lostNodes atomic.Int32

// runningPodOn creates a pod of the control plane's component, bound to
// node and reported Running, as the scheduler and a kubelet would.
func runningPodOn(t *testing.T, ns, component, name, node string) {
	t.Helper()
	container := corev1.Container{Name: component, Image: "example.com/" + component + ":1", SecurityContext: podspec.RestrictedContainerSecurityContext()}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{hyperv1.ControlPlaneComponentLabel: component, "app": component}},
		Spec:       corev1.PodSpec{NodeName: node, SecurityContext: podspec.RestrictedPodSecurityContext(), Containers: []corev1.Container{container}},
	}
	if err := env.Client.Create(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	pod.Status.Phase = corev1.PodRunning
	if err := env.Client.Status().Update(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
}

// TestControlPlaneOnALostNode: a single-replica control plane whose
// kube-apiserver and etcd run on a node whose kubelet stops heartbeating
// is reported Available=False, naming the node, once the node has been
// silent for the bound, while its control-plane-operator (elsewhere) still
// renews and reports it available; status is written once, not on every
// pass; when the node heartbeats again, Available follows the
// HostedControlPlane again.
func TestControlPlaneOnALostNode(t *testing.T) {
	const lostAfter = 2 * time.Second
	user := startOperator(t, func(r *hostedcluster.Reconciler) { r.Heartbeats = nodeheartbeat.New(lostAfter, nil) })
	c := newCluster(t, "4.17.0", nil)
	awaitControlPlane(t, c)
	renewAs(t, c, "cpo-x", 60)
	reportReady(t, c, "4.17.0")
	testutil.Eventually(t, converge, func() error { return checkCondition(c.get(t), hyperv1.Available, metav1.ConditionTrue) })

	ns := c.controlPlaneNamespace()
	n := lostNodes.Add(1)
	node := testutil.StartHeartbeats(t, env.Client, fmt.Sprintf("control-plane-node-%d", n))
	testutil.StartHeartbeats(t, env.Client, fmt.Sprintf("other-node-%d", n))
	runningPodOn(t, ns, "kube-apiserver", "kube-apiserver-1", node.Node)
	runningPodOn(t, ns, "etcd", "etcd-0", node.Node)

	// Heartbeating for longer than the bound: nothing changes.
	time.Sleep(lostAfter + time.Second)
	if err := checkCondition(c.get(t), hyperv1.Available, metav1.ConditionTrue); err != nil {
		t.Fatalf("while the node heartbeats: %v", err)
	}

	node.Stop()
	lostAt := time.Now()
	var message string
	testutil.Eventually(t, lostAfter+10*time.Second, func() error {
		a := meta.FindStatusCondition(c.get(t).Status.Conditions, hyperv1.Available)
		if a == nil || a.Status != metav1.ConditionFalse || a.Reason != hyperv1.ControlPlaneNodeLostReason {
			return fmt.Errorf("Available is %v", a)
		}
		message = a.Message
		return nil
	})
	took := time.Since(lostAt)
	t.Logf("Available=False %s after the node's last heartbeat (bound %s): %s", took.Round(time.Millisecond), lostAfter, message)
	if took < lostAfter-500*time.Millisecond {
		t.Errorf("Available went False %s after the last heartbeat, before the bound %s", took, lostAfter)
	}
	for _, want := range []string{"kube-apiserver runs only on node " + node.Node, "etcd has lost its quorum"} {
		if !strings.Contains(message, want) {
			t.Errorf("Available's message %q does not say %q", message, want)
		}
	}

	// Passes while the node stays lost write nothing more.
	quiet := time.Now()
	for i := range 3 {
		c.touch(t, i)
		time.Sleep(time.Second)
	}
	for _, w := range writesBy(t, user, quiet) {
		if w.ObjectRef != nil && w.ObjectRef.Resource == "hostedclusters" {
			t.Errorf("a pass while the node stays lost wrote: %s", describe(writesBy(t, user, quiet)))
			break
		}
	}

	node.Resume(env.Client)
	foundAt := time.Now()
	testutil.Eventually(t, 10*time.Second, func() error { return checkCondition(c.get(t), hyperv1.Available, metav1.ConditionTrue) })
	t.Logf("Available=True %s after the node heartbeated again", time.Since(foundAt).Round(time.Millisecond))
}
