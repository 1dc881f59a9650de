package leasearbiter

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/holderpod"
	"github.com/hypershift-le/hypershift/support/testutil"
)

// goneWays are the ways a leader's pod goes while its process is stopped.
var goneWays = []struct {
	name   string
	reason string
	// finalizer keeps the pod object through its deletion.
	finalizer bool
	makeGone  func(t *testing.T, pod *corev1.Pod)
}{
	{name: "force-deleted", reason: holderpod.ReasonNotFound, makeGone: func(t *testing.T, pod *corev1.Pod) {
		if err := env.Client.Delete(t.Context(), pod, client.GracePeriodSeconds(0)); err != nil {
			t.Fatal(err)
		}
	}},
	{name: "failed", reason: holderpod.ReasonFailed, makeGone: func(t *testing.T, pod *corev1.Pod) {
		setPodStatus(t, pod, corev1.PodFailed, corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}})
	}},
	{name: "succeeded", reason: holderpod.ReasonSucceeded, makeGone: func(t *testing.T, pod *corev1.Pod) {
		setPodStatus(t, pod, corev1.PodSucceeded, corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}})
	}},
	{name: "deleted, its container terminated", reason: holderpod.ReasonTerminated, finalizer: true, makeGone: func(t *testing.T, pod *corev1.Pod) {
		if err := env.Client.Delete(t.Context(), pod); err != nil {
			t.Fatal(err)
		}
		setPodStatus(t, pod, corev1.PodRunning, corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "Error"}})
	}},
}

func TestReleasesTheLeaseOfAGoneHolder(t *testing.T) {
	user := startArbiter(t, nil)
	for _, way := range goneWays {
		t.Run("when the leader's pod is "+way.name+", a standby leads within 2s", func(t *testing.T) {
			cp := newControlPlane(t, fenced)
			var finalizers []string
			if way.finalizer {
				finalizers = []string{"example.com/hold"}
			}
			leaderPod := cp.pod(t, "cpo-a", finalizers...)
			cp.pod(t, "cpo-b")
			leader := cp.campaign(t, "cpo-a")
			leader.awaitLead(t, 10*time.Second)
			standby := cp.campaign(t, "cpo-b")
			time.Sleep(500 * time.Millisecond) // the standby watches the Lease

			leader.stop() // the process is gone; the Lease still names it
			gone := time.Now()
			way.makeGone(t, leaderPod)
			led := standby.awaitLead(t, short.LeaseDuration+5*time.Second)
			if took := led.Sub(gone); took > takeoverBound {
				t.Errorf("the standby led %s after the leader's pod was %s, want at most %s", took, way.name, takeoverBound)
			} else {
				t.Logf("the standby led %s after the leader's pod was %s", took.Round(time.Millisecond), way.name)
			}
			writes := leaseWrites(t, user, cp.ns)
			if len(writes) != 1 || writes[0].Verb != "update" || code(writes[0]) != 200 {
				t.Errorf("the arbiter's Lease writes: %s, want one successful update", describe(writes))
			}
			want := fmt.Sprintf("Lease released for cpo-a: pod gone (%s)", way.reason)
			testutil.Eventually(t, 10*time.Second, func() error {
				if notes := cp.releaseEvents(t); len(notes) != 1 || notes[0] != want {
					return fmt.Errorf("events %q, want [%q]", notes, want)
				}
				return nil
			})
		})
	}
	t.Run("when the holder's pod never existed, the Lease is released", func(t *testing.T) {
		cp := newControlPlane(t, fenced)
		cp.lease(t, hyperv1.ControlPlaneOperatorLeaseName, "cpo-ghost")
		testutil.Eventually(t, takeoverBound, func() error {
			if h := cp.holder(t, hyperv1.ControlPlaneOperatorLeaseName); h != "" {
				return fmt.Errorf("holder %q", h)
			}
			return nil
		})
	})
}

// TestLeavesARunningHolderAlone: negative controls. A leader that stopped
// renewing (frozen, partitioned) in a pod that exists and runs is not gone:
// its standby waits the lease duration, and the arbiter writes nothing.
func TestLeavesARunningHolderAlone(t *testing.T) {
	user := startArbiter(t, nil)
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, pod *corev1.Pod)
	}{
		{name: "its pod runs", change: func(*testing.T, *corev1.Pod) {}},
		{name: "its pod is being deleted and its container still runs", change: func(t *testing.T, pod *corev1.Pod) {
			if err := env.Client.Delete(t.Context(), pod); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "its pod's container crashed and was restarted in place", change: func(t *testing.T, pod *corev1.Pod) {
			setContainerStatus(t, pod, corev1.PodRunning, restartedInPlace)
		}},
	} {
		t.Run("when the leader stops renewing and "+tc.name+", the standby waits the lease duration", func(t *testing.T) {
			cp := newControlPlane(t, fenced)
			leaderPod := cp.pod(t, "cpo-a", "example.com/hold")
			cp.pod(t, "cpo-b")
			leader := cp.campaign(t, "cpo-a")
			leader.awaitLead(t, 10*time.Second)
			standby := cp.campaign(t, "cpo-b")
			time.Sleep(500 * time.Millisecond)
			leader.stop()
			stopped := time.Now()
			tc.change(t, leaderPod)
			led := standby.awaitLead(t, short.LeaseDuration+5*time.Second)
			if took := led.Sub(stopped); took < short.LeaseDuration-time.Second {
				t.Errorf("the standby led %s after the leader stopped, before the lease duration %s: the Lease was released", took, short.LeaseDuration)
			}
			if writes := leaseWrites(t, user, cp.ns); len(writes) != 0 {
				t.Errorf("the arbiter wrote the Lease of a holder whose pod runs: %s", describe(writes))
			}
		})
	}
}

// TestDoesNotReleaseALeaseThatChanged: the release is a compare-and-swap on
// the resourceVersion of the read that named the gone holder.
func TestDoesNotReleaseALeaseThatChanged(t *testing.T) {
	var cp *controlPlane
	user := startArbiter(t, func(r *Reconciler) {
		r.beforeRelease = func(ctx context.Context, read *coordinationv1.Lease) {
			if cp == nil || read.Namespace != cp.ns {
				return
			}
			// Between the read and the write, a standby takes the Lease.
			lease := read.DeepCopy()
			lease.Spec.HolderIdentity = ptr.To("cpo-b")
			lease.Spec.LeaseTransitions = ptr.To(ptr.Deref(lease.Spec.LeaseTransitions, 0) + 1)
			if err := env.Client.Update(ctx, lease); err != nil {
				t.Errorf("the standby's takeover failed: %v", err)
			}
		}
	})
	cp = newControlPlane(t, fenced)
	cp.pod(t, "cpo-b")
	cp.lease(t, hyperv1.ControlPlaneOperatorLeaseName, "cpo-gone")
	testutil.Eventually(t, 10*time.Second, func() error {
		if n := len(leaseWrites(t, user, cp.ns)); n == 0 {
			return fmt.Errorf("the arbiter has not written yet")
		}
		return nil
	})
	time.Sleep(2 * time.Second) // it looks again, and must leave the new holder alone
	if h := cp.holder(t, hyperv1.ControlPlaneOperatorLeaseName); h != "cpo-b" {
		t.Errorf("the holder is %q, want the standby that took the Lease, cpo-b", h)
	}
	writes := leaseWrites(t, user, cp.ns)
	if len(writes) != 1 || writes[0].Verb != "update" || code(writes[0]) != 409 {
		t.Errorf("the arbiter's Lease writes: %s, want one update refused with 409", describe(writes))
	}
	if notes := cp.releaseEvents(t); len(notes) != 0 {
		t.Errorf("a release was recorded: %q", notes)
	}
}

// TestNeverTouchesOtherLeases: only the CPO Lease of a control-plane
// namespace claimed by an existing, unpaused HostedCluster is released.
func TestNeverTouchesOtherLeases(t *testing.T) {
	user := startArbiter(t, nil)
	ctx := t.Context()
	released := newControlPlane(t, fenced)
	released.lease(t, hyperv1.ControlPlaneOperatorLeaseName, "cpo-gone")

	unrelated := newControlPlane(t, fenced)
	unrelated.lease(t, "another-lease", "cpo-gone")

	paused := newControlPlane(t, fenced)
	paused.hc.Spec.PausedUntil = ptr.To("true")
	if err := env.Client.Update(ctx, paused.hc); err != nil {
		t.Fatal(err)
	}
	paused.lease(t, hyperv1.ControlPlaneOperatorLeaseName, "cpo-gone")

	plain := &controlPlane{ns: env.Namespace(t)} // not a control-plane namespace
	plain.lease(t, hyperv1.ControlPlaneOperatorLeaseName, "cpo-gone")

	unclaimed := newControlPlane(t, fenced) // labelled, but its claim was removed
	namespace := &corev1.Namespace{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: unclaimed.ns}, namespace); err != nil {
		t.Fatal(err)
	}
	delete(namespace.Annotations, hyperv1.ClusterAnnotation)
	if err := env.Client.Update(ctx, namespace); err != nil {
		t.Fatal(err)
	}
	unclaimed.lease(t, hyperv1.ControlPlaneOperatorLeaseName, "cpo-gone")

	// The positive control: the arbiter runs and acts.
	testutil.Eventually(t, 10*time.Second, func() error {
		if h := released.holder(t, hyperv1.ControlPlaneOperatorLeaseName); h != "" {
			return fmt.Errorf("holder %q", h)
		}
		return nil
	})
	time.Sleep(2 * time.Second)
	for name, cp := range map[string]*controlPlane{"another Lease": unrelated, "a paused HostedCluster": paused, "a namespace that is not a control-plane namespace": plain, "an unclaimed namespace": unclaimed} {
		if writes := leaseWrites(t, user, cp.ns); len(writes) != 0 {
			t.Errorf("the arbiter wrote a Lease in %s: %s", name, describe(writes))
		}
	}
	if h := paused.holder(t, hyperv1.ControlPlaneOperatorLeaseName); h != "cpo-gone" {
		t.Fatalf("the paused HostedCluster's Lease names %q", h)
	}
	// Lifting the pause lets the arbiter act.
	paused.hc.Spec.PausedUntil = nil
	if err := env.Client.Update(ctx, paused.hc); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		if h := paused.holder(t, hyperv1.ControlPlaneOperatorLeaseName); h != "" {
			return fmt.Errorf("holder %q once unpaused", h)
		}
		return nil
	})
}

// TestConvergedCostsNothing: with every holder's pod running, the arbiter
// sends no request at all (watches aside) over a quiet window: 0 Lease
// writes per HostedCluster.
func TestConvergedCostsNothing(t *testing.T) {
	user := startArbiter(t, nil)
	var cps []*controlPlane
	for range 3 {
		cp := newControlPlane(t, fenced)
		cp.pod(t, "cpo-a")
		cp.pod(t, "cpo-b")
		cp.campaign(t, "cpo-a").awaitLead(t, 10*time.Second)
		cp.campaign(t, "cpo-b")
		cps = append(cps, cp)
	}
	time.Sleep(2 * time.Second) // the arbiter looked at each holder once
	from := time.Now()
	time.Sleep(3 * short.Renew()) // renewals, three per Lease
	to := time.Now()
	events, err := env.AuditEvents()
	if err != nil {
		t.Fatal(err)
	}
	renewals := 0
	for _, cp := range cps {
		writes := 0
		for _, e := range events {
			at := e.RequestReceivedTimestamp.Time
			if e.ObjectRef == nil || e.ObjectRef.Namespace != cp.ns || at.Before(from) || !at.Before(to) {
				continue
			}
			switch {
			case e.User.Username == user && e.Verb != "watch":
				writes++
				t.Errorf("in %s the arbiter sent %s %s/%s while converged", cp.ns, e.Verb, e.ObjectRef.Resource, e.ObjectRef.Name)
			case e.ObjectRef.Resource == "leases" && e.Verb == "update" && code(e) == 200:
				renewals++
			}
		}
		t.Logf("%s: %d arbiter requests in the quiet window", cp.ns, writes)
	}
	if renewals < len(cps)*2 {
		t.Fatalf("only %d renewals in the window: the check proves nothing", renewals)
	}
	// Its pod cache holds the control-plane-operator's pods only.
	podWatches := 0
	for _, e := range events {
		if e.User.Username == user && e.ObjectRef != nil && e.ObjectRef.Resource == "pods" && (e.Verb == "list" || e.Verb == "watch") {
			podWatches++
			if !strings.Contains(e.RequestURI, "labelSelector=app%3Dcontrol-plane-operator") {
				t.Errorf("the arbiter lists pods past the label selector: %s", e.RequestURI)
			}
		}
	}
	if podWatches == 0 {
		t.Error("the arbiter never listed pods: the check proves nothing")
	}
}

// TestWithoutAFenceWaitsForTheTokenWindow: unless the API server is seen
// to fence the namespace, a deleted pod's Lease is released only once its
// token no longer authenticates, and the Lease of a pod whose object still
// exists is left to the lease-duration rule.
func TestWithoutAFenceWaitsForTheTokenWindow(t *testing.T) {
	startArbiter(t, nil)
	type deleted struct {
		cp  *controlPlane
		pod *corev1.Pod
	}
	var cases []deleted
	for _, f := range []fence{unfenced, unbound} {
		cp := newControlPlane(t, f)
		cases = append(cases, deleted{cp: cp, pod: cp.pod(t, "cpo-a")})
		cp.lease(t, hyperv1.ControlPlaneOperatorLeaseName, "cpo-a")
	}
	failed := newControlPlane(t, unfenced)
	failedPod := failed.pod(t, "cpo-a")
	failed.lease(t, hyperv1.ControlPlaneOperatorLeaseName, "cpo-a")
	time.Sleep(time.Second) // the arbiter saw each holder running

	setPodStatus(t, failedPod, corev1.PodFailed, corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}})
	start := time.Now()
	for _, c := range cases {
		if err := env.Client.Delete(t.Context(), c.pod, client.GracePeriodSeconds(0)); err != nil {
			t.Fatal(err)
		}
	}
	releasedAt := map[string]time.Duration{}
	for time.Since(start) < TokenWindow+3*time.Second && len(releasedAt) < len(cases) {
		for _, c := range cases {
			if _, done := releasedAt[c.cp.ns]; !done && c.cp.holder(t, hyperv1.ControlPlaneOperatorLeaseName) == "" {
				releasedAt[c.cp.ns] = time.Since(start)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, c := range cases {
		at, ok := releasedAt[c.cp.ns]
		switch {
		case !ok:
			t.Errorf("%s: not released within %s of the deletion", c.cp.ns, TokenWindow+3*time.Second)
		case at < TokenWindow:
			t.Errorf("%s: released %s after the deletion, inside the token window %s", c.cp.ns, at, TokenWindow)
		default:
			t.Logf("%s: released %s after the deletion", c.cp.ns, at.Round(time.Millisecond))
		}
	}
	if h := failed.holder(t, hyperv1.ControlPlaneOperatorLeaseName); h != "cpo-a" {
		t.Errorf("without a fence the Lease of a Failed pod, whose token still authenticates, was released (holder %q)", h)
	}
}
