package nodeagent_test

import (
	"context"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/hypershift-le/hypershift/test/nodeagent"
)

// TestStoppingTheAgentStopsItsProcesses runs a second agent for a node of
// its own and stops it: its processes get SIGTERM, then SIGKILL after 5s.
func TestStoppingTheAgentStopsItsProcesses(t *testing.T) {
	ns := env.Namespace(t)
	const node = "second-node"
	dir := t.TempDir()
	second, err := nodeagent.New(nodeagent.Config{
		RESTConfig:    env.Config,
		NodeName:      node,
		Resolve:       resolve,
		StateDir:      dir,
		Log:           funcr.New(agentLog.write, funcr.Options{}),
		AddressPrefix: netip.MustParsePrefix("127.2.0.0/16"),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan error, 1)
	go func() { done <- second.Run(ctx) }()

	onNode := func(p *corev1.Pod) {
		p.Spec.NodeName = node
		p.Spec.TerminationGracePeriodSeconds = ptr.To(int64(60))
	}
	createPod(t, ns, "served", onNode, httpsContainer("server", 8443))
	createPod(t, ns, "stubborn", onNode, shellContainer("sleeper", `trap "" TERM; sleep 1000`))
	var pids []int
	for _, name := range []string{"served", "stubborn"} {
		pod := waitRunningReady(t, ns, name)
		if !strings.HasPrefix(pod.Status.PodIP, "127.2.") {
			t.Errorf("pod %s got %s, not an address of 127.2.0.0/16", name, pod.Status.PodIP)
		}
		eventually(t, 10*time.Second, "a process for "+name, func() error {
			for _, c := range []string{"server", "sleeper"} {
				if pid, ok := second.PodPID(ns, name, c); ok {
					pids = append(pids, pid)
					return nil
				}
			}
			return context.DeadlineExceeded
		})
	}

	start := time.Now()
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return within 20s of its context's end")
	}
	// The shell ignores SIGTERM: the 5s to SIGKILL, not the pod's 60s.
	if elapsed := time.Since(start); elapsed < 4500*time.Millisecond || elapsed > 15*time.Second {
		t.Errorf("Run returned after %s, want about 5s", elapsed)
	}
	for _, pid := range pids {
		if groupAlive(pid) {
			t.Errorf("process group %d outlived the agent", pid)
		}
	}
	raw := readFile(filepath.Join(dir, "logs", ns+"_served_server.log"))
	if !strings.Contains(raw, "received a termination signal") {
		t.Errorf("the server did not get SIGTERM:\n%s", raw)
	}
	if err := second.Run(context.Background()); err == nil {
		t.Error("a second Run should fail")
	}
}
