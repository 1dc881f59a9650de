package leasearbiter

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/holderpod"
	"github.com/hypershift-le/hypershift/support/testutil"
)

var (
	// exited is the state a kubelet reports of a container whose process
	// exited with an error.
	exited = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, Reason: "Error", FinishedAt: metav1.Now()}}
	// backingOff is a container that exited and waits for the kubelet to
	// start it again.
	backingOff = corev1.ContainerStatus{RestartCount: 2, LastTerminationState: exited,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 20s restarting failed container"}}}
	// restartedInPlace is a container that exited and runs again.
	restartedInPlace = corev1.ContainerStatus{RestartCount: 1, LastTerminationState: exited,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}
)

// TestCrashLoopingHolder: a leader whose container exited and waits in
// the kubelet's restart back-off (its pod still Running) is released at
// once under an observed fence, and only then: without the fence its
// standby waits the lease duration, and the arbiter writes nothing.
func TestCrashLoopingHolder(t *testing.T) {
	user := startArbiter(t, nil)
	for _, tc := range []struct {
		name      string
		fence     fence
		wantEarly bool
	}{
		{name: "fenced: a standby leads within 2s", fence: fenced, wantEarly: true},
		{name: "not fenced: the standby waits the lease duration", fence: unfenced},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cp := newControlPlane(t, tc.fence)
			leaderPod := cp.pod(t, "cpo-a")
			cp.pod(t, "cpo-b")
			leader := cp.campaign(t, "cpo-a")
			leader.awaitLead(t, 10*time.Second)
			standby := cp.campaign(t, "cpo-b")
			time.Sleep(500 * time.Millisecond) // the standby watches the Lease

			leader.stop() // the process exits without releasing
			stopped := time.Now()
			setContainerStatus(t, leaderPod, corev1.PodRunning, backingOff)
			led := standby.awaitLead(t, short.LeaseDuration+5*time.Second)
			took := led.Sub(stopped)
			writes := leaseWrites(t, user, cp.ns)
			if !tc.wantEarly {
				if took < short.LeaseDuration-time.Second {
					t.Errorf("the standby led %s after the leader stopped, before the lease duration %s: the Lease was released without a fence", took, short.LeaseDuration)
				}
				if len(writes) != 0 {
					t.Errorf("the arbiter wrote the Lease without a fence: %s", describe(writes))
				}
				return
			}
			if took > takeoverBound {
				t.Errorf("the standby led %s after the leader's container exited, want at most %s", took, takeoverBound)
			} else {
				t.Logf("the standby led %s after the leader's container exited (lease %s)", took.Round(time.Millisecond), short.LeaseDuration)
			}
			if len(writes) != 1 || writes[0].Verb != "update" || code(writes[0]) != 200 {
				t.Errorf("the arbiter's Lease writes: %s, want one successful update", describe(writes))
			}
			want := fmt.Sprintf("Lease released for cpo-a: %s (CrashLoopBackOff)", holderpod.ReasonBackOff)
			testutil.Eventually(t, 10*time.Second, func() error {
				if notes := cp.releaseEvents(t); len(notes) != 1 || notes[0] != want {
					return fmt.Errorf("events %q, want [%q]", notes, want)
				}
				return nil
			})
		})
	}
	t.Run("fenced, when the back-off began before the fence was seen, the release follows the fence", func(t *testing.T) {
		cp := newControlPlane(t, unfenced)
		leaderPod := cp.pod(t, "cpo-a")
		leader := cp.campaign(t, "cpo-a")
		leader.awaitLead(t, 10*time.Second)
		leader.stop()
		setContainerStatus(t, leaderPod, corev1.PodRunning, backingOff)
		time.Sleep(time.Second) // judged stopped, not fenced: left alone
		if h := cp.holder(t, hyperv1.ControlPlaneOperatorLeaseName); h != "cpo-a" {
			t.Fatalf("holder %q before the fence was seen", h)
		}
		cp.setFence(t, fenced)
		testutil.Eventually(t, takeoverBound, func() error {
			if h := cp.holder(t, hyperv1.ControlPlaneOperatorLeaseName); h != "" {
				return fmt.Errorf("holder %q after the fence was seen", h)
			}
			return nil
		})
	})
}

// TestExitedHolder: a leader whose container reads exited, its pod
// Running, and is not started again within the restart grace (a back-off
// the kubelet has not reported yet) is released under an observed fence;
// one the kubelet starts again within the grace, and any without the
// fence, are left to the lease duration.
func TestExitedHolder(t *testing.T) {
	// The kubelet's exit time has whole seconds: the grace runs from up
	// to a second before the exit.
	const grace = 2 * time.Second
	user := startArbiter(t, func(r *Reconciler) { r.RestartGrace = grace })
	for _, tc := range []struct {
		name      string
		fence     fence
		restarted bool
		wantEarly bool
	}{
		{name: "fenced, not restarted: a standby leads once the grace has passed", fence: fenced, wantEarly: true},
		{name: "fenced, restarted within the grace: the standby waits the lease duration", fence: fenced, restarted: true},
		{name: "not fenced: the standby waits the lease duration", fence: unfenced},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cp := newControlPlane(t, tc.fence)
			leaderPod := cp.pod(t, "cpo-a")
			cp.pod(t, "cpo-b")
			leader := cp.campaign(t, "cpo-a")
			leader.awaitLead(t, 10*time.Second)
			standby := cp.campaign(t, "cpo-b")
			time.Sleep(500 * time.Millisecond) // the standby watches the Lease

			leader.stop() // the process exits without releasing
			stopped := time.Now()
			setContainerStatus(t, leaderPod, corev1.PodRunning, corev1.ContainerStatus{
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, Reason: "Error", FinishedAt: metav1.NewTime(stopped)}},
			})
			if tc.restarted {
				time.Sleep(300 * time.Millisecond)
				setContainerStatus(t, leaderPod, corev1.PodRunning, restartedInPlace)
			}
			led := standby.awaitLead(t, short.LeaseDuration+5*time.Second)
			took := led.Sub(stopped)
			writes := leaseWrites(t, user, cp.ns)
			if !tc.wantEarly {
				if took < short.LeaseDuration-time.Second {
					t.Errorf("the standby led %s after the leader stopped, before the lease duration %s: the Lease was released", took, short.LeaseDuration)
				}
				if len(writes) != 0 {
					t.Errorf("the arbiter wrote the Lease: %s", describe(writes))
				}
				return
			}
			if took < grace-time.Second || took > grace+takeoverBound {
				t.Errorf("the standby led %s after the leader's container exited, want between the grace %s (less a second) and %s", took, grace, grace+takeoverBound)
			} else {
				t.Logf("the standby led %s after the leader's container exited (grace %s, lease %s)", took.Round(time.Millisecond), grace, short.LeaseDuration)
			}
			if len(writes) != 1 || writes[0].Verb != "update" || code(writes[0]) != 200 {
				t.Errorf("the arbiter's Lease writes: %s, want one successful update", describe(writes))
			}
			want := fmt.Sprintf("Lease released for cpo-a: %s for ", holderpod.ReasonExited)
			testutil.Eventually(t, 10*time.Second, func() error {
				if notes := cp.releaseEvents(t); len(notes) != 1 || !strings.HasPrefix(notes[0], want) {
					return fmt.Errorf("events %q, want one beginning %q", notes, want)
				}
				return nil
			})
		})
	}
}
