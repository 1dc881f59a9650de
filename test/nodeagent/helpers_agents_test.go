package nodeagent_test

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hypershift-le/hypershift/test/nodeagent"
)

// secondAgent is an agent for a node of its own, on the same cluster.
type secondAgent struct {
	*nodeagent.Agent
	node string
	dir  string
	stop func() error
}

// startSecondAgent runs an agent for node, with its pods' addresses in
// prefix, configured further by mutate; it stops when the test ends.
func startSecondAgent(t *testing.T, node string, prefix netip.Prefix, mutate func(*nodeagent.Config)) *secondAgent {
	t.Helper()
	dir := t.TempDir()
	cfg := nodeagent.Config{
		RESTConfig:    env.Config,
		NodeName:      node,
		Resolve:       resolve,
		StateDir:      dir,
		Log:           funcr.New(agentLog.write, funcr.Options{}),
		AddressPrefix: prefix,
	}
	if mutate != nil {
		mutate(&cfg)
	}
	a, err := nodeagent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	stopped := false
	var result error
	stop := func() error {
		if stopped {
			return result
		}
		stopped = true
		cancel()
		select {
		case result = <-done:
		case <-time.After(20 * time.Second):
			result = context.DeadlineExceeded
		}
		return result
	}
	t.Cleanup(func() {
		_ = stop()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = env.Client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}})
	})
	return &secondAgent{Agent: a, node: node, dir: dir, stop: stop}
}

// onNode binds a pod to the node at creation.
func (s *secondAgent) onNode(p *corev1.Pod) { p.Spec.NodeName = s.node }

// createServiceAccount creates a ServiceAccount in ns.
func createServiceAccount(t *testing.T, ns, name string) {
	t.Helper()
	if err := env.Client.Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}); err != nil {
		t.Fatal(err)
	}
}

// ungate removes a pod's scheduling gates.
func ungate(t *testing.T, ns, name string) {
	t.Helper()
	pod, err := getPod(t, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(pod.DeepCopy())
	pod.Spec.SchedulingGates = nil
	if err := env.Client.Patch(t.Context(), pod, patch); err != nil {
		t.Fatal(err)
	}
}

// kubernetesServiceIP returns the ClusterIP of the `kubernetes` Service.
func kubernetesServiceIP(t *testing.T) string {
	t.Helper()
	svc := &corev1.Service{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: "kubernetes"}, svc); err != nil {
		t.Fatal(err)
	}
	return svc.Spec.ClusterIP
}
