package nodeagent_test

import (
	"fmt"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestAPartitionedPodRunsOnUntilHealed: a pod cut off from the API server
// keeps its processes through its forced deletion, as on a partitioned
// node, and they stop once the partition heals.
func TestAPartitionedPodRunsOnUntilHealed(t *testing.T) {
	ns := env.Namespace(t)
	createPod(t, ns, "cutoff", nil, httpsContainer("server", 8443))
	pod := waitRunningReady(t, ns, "cutoff")
	pid := waitPID(t, ns, "cutoff", "server")
	if !agent.Partition(ns, "cutoff") {
		t.Fatal("the agent runs no pod cutoff")
	}
	statusWrites := writes.statusWrites(ns, "cutoff")
	if err := env.Client.Delete(t.Context(), pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	waitGone(t, ns, "cutoff", 10*time.Second)
	time.Sleep(5 * time.Second) // well past the 2s a vanished pod's processes get
	if !groupAlive(pid) {
		t.Fatal("the partitioned pod's process was stopped")
	}
	if got, ok := agent.PodPID(ns, "cutoff", "server"); !ok || got != pid {
		t.Errorf("PodPID = %d, %v; want the running process %d", got, ok, pid)
	}
	if n := writes.statusWrites(ns, "cutoff"); n != statusWrites {
		t.Errorf("the agent wrote the partitioned pod's status %d times", n-statusWrites)
	}
	healed := time.Now()
	if !agent.Heal(ns, "cutoff") {
		t.Fatal("the agent no longer runs pod cutoff")
	}
	eventually(t, 15*time.Second, "the deleted pod's process stopped once healed", func() error {
		if groupAlive(pid) {
			return fmt.Errorf("process group %d is alive", pid)
		}
		return nil
	})
	t.Logf("the process stopped %s after the partition healed", time.Since(healed).Round(time.Millisecond))
}
