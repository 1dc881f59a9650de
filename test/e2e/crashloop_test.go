package e2e

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/holderpod"
	"github.com/hypershift-le/hypershift/support/testutil"
	"github.com/hypershift-le/hypershift/test/auditlog"
)

// testCrashLoopingLeader: kill -9 the leader's process each time its pod
// runs it again, until the kubelet holds the container in restart
// back-off (a leader in a crash loop, its pod still Running): the parent
// releases the Lease, under the fence, and a standby leads; the pod's
// process, when it comes back, follows and writes nothing.
func testCrashLoopingLeader(t *testing.T, ns string) {
	leader, standby := awaitLeaderAndStandby(t, ns)
	// Each kill right after a renewal: the lease (10s) then runs out
	// well after the parent's rule releases it.
	killed := crashLoop(t, ns, leader, true)
	testutil.Eventually(t, leaseDuration+margin, func() error {
		if h := holder(t, ns); h == "" || h == leader {
			return fmt.Errorf("holder %q", h)
		}
		return nil
	})
	released, takeover := parentRelease(t, ns, killed)
	t.Logf("crash-looping leader %s: the parent released its Lease %s after the last kill, %s led %s after it (lease %s)",
		leader, released.Sub(killed).Round(time.Millisecond), holder(t, ns), takeover.Sub(killed).Round(time.Millisecond), leaseDuration)
	if h := holder(t, ns); h != standby {
		t.Errorf("the Lease went to %s, not the standby %s", h, standby)
	}
	// Released for an exit not restarted within the grace, or for the
	// back-off, should the kubelet report it first.
	want := fmt.Sprintf("Lease released for %s: container exited", leader)
	awaitLeaseReleasedEvent(t, "arbiter", want+"...", func(note string) bool {
		return strings.HasPrefix(note, want+", not restarted for ") || strings.HasPrefix(note, fmt.Sprintf("Lease released for %s: %s (", leader, holderpod.ReasonBackOff))
	}, killed)

	// The pod runs its process again after the back-off, as a standby.
	awaitRestarted(t, ns, leader, cpoRestarts(t, ns, leader)-1)
	time.Sleep(2 * retryPeriod)
	for _, e := range auditEvents(t) {
		if e.RequestReceivedTimestamp.After(released) && podOf(e) == leader && auditlog.IsWrite(e) && auditlog.Succeeded(e) {
			t.Errorf("after the release a write by %s was accepted: %s %s", leader, e.Verb, e.RequestURI)
		}
	}
	awaitLeaderAndStandby(t, ns)
}

// crashLoop kills pod's control-plane-operator process each time its pod
// runs it again, until the kubelet holds the container in restart back-off,
// and returns when it killed it last; afterRenewal kills each process
// right after it renewed the Lease.
func crashLoop(t *testing.T, ns, pod string, afterRenewal bool) (killed time.Time) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		pid := cpoPID(t, ns, pod)
		if afterRenewal {
			awaitRenewedSince(t, ns, time.Now(), time.Minute)
		}
		killed = time.Now()
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		// A first crash is restarted at once; one soon after it waits.
		backOff, err := awaitBackOffOrRestart(t, ns, pod, pid)
		if err != nil {
			t.Fatal(err)
		}
		if backOff != "" {
			t.Logf("kill %d: the kubelet holds %s's container: %s", attempt, pod, backOff)
			return killed
		}
		if attempt == 4 {
			t.Fatalf("after %d kills the kubelet still restarts %s's container at once", attempt, pod)
		}
		// The restarted process takes its Lease back (same identity).
		testutil.Eventually(t, time.Minute, func() error {
			if h := holder(t, ns); h != pod {
				return fmt.Errorf("holder %q, want the restarted %s", h, pod)
			}
			return nil
		})
	}
}

// awaitBackOffOrRestart waits, after pod's control-plane-operator process
// pid was killed, until the kubelet either reports the container waiting
// in restart back-off (the waiting reason is returned) or runs a new
// process in it ("" is returned).
func awaitBackOffOrRestart(t *testing.T, ns, pod string, pid int) (string, error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		p := &corev1.Pod{}
		if err := lc.Env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: pod}, p); err != nil {
			return "", err
		}
		if verdict := holderpod.Judge(p, hyperv1.ControlPlaneOperatorName); verdict.Stopped {
			return verdict.Reason, nil
		}
		if newPID, ok := lc.PodPID(t.Context(), ns, pod, hyperv1.ControlPlaneOperatorName); ok && newPID != pid {
			return "", nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return "", fmt.Errorf("30s after the kill of %s's process the kubelet neither restarted it nor reports a back-off", pod)
}
