package e2e

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/cmd/cluster"
	"github.com/hypershift-le/hypershift/hypershift-operator/controllers/leasearbiter"
	"github.com/hypershift-le/hypershift/support/testutil"
	"github.com/hypershift-le/hypershift/test/auditlog"
)

const (
	// hoUser is the hypershift-operator's pods' user.
	hoUser = "system:serviceaccount:hypershift:hypershift-operator"
	// arbiterBound is how soon a standby must lead once the leader's pod
	// is gone.
	arbiterBound = 2 * time.Second
	// renewInterval is how often a leader renews: 2/3 of the 7s renew
	// deadline installOperator renders.
	renewInterval = 7 * time.Second * 2 / 3
)

// testArbiter: the parent releases the Lease of a leader whose pod is gone,
// or whose container is held in restart back-off under the fence, and no
// other. Its own highly available cluster, with a leader and a standby
// control-plane-operator, goes through a quiet window, a same-pod restart,
// a crash-looping leader, a frozen leader whose pod runs, a frozen leader
// whose pod is force-deleted, and a leader whose pod fails; the audit log
// is the witness.
func testArbiter(t *testing.T) {
	// The story needs the control-plane-operators, not a serving control
	// plane: it does not wait for Available.
	createClusterNoWait(t, "arbiter", hyperv1.HighlyAvailable)
	ns := controlPlaneNamespace("arbiter")
	awaitLeaderAndStandby(t, ns)
	t.Run("converged, the parent writes no Lease", testArbiterQuiet)
	t.Run("a leader restarted in its pod resumes at once", func(t *testing.T) { testSamePodRestart(t, ns) })
	t.Run("a crash-looping leader is released under the fence", func(t *testing.T) { testCrashLoopingLeader(t, ns) })
	t.Run("a frozen leader whose pod runs is not released", func(t *testing.T) { testFrozenLeaderKept(t, ns) })
	t.Run("a frozen leader's force-deleted pod is released", func(t *testing.T) { testForceDeletedLeader(t, ns) })
	t.Run("a failed leader pod is released", func(t *testing.T) { testFailedLeader(t, ns) })
	execute(t, cluster.NewDestroyCommand(), "cluster", "--name=arbiter", "--namespace=clusters", "--wait", "--timeout=4m")
}

// awaitLeaderAndStandby waits until two CPO pods run, ready, one of them
// holding the Lease, and returns the leader and the standby.
func awaitLeaderAndStandby(t *testing.T, ns string) (leader, standby string) {
	t.Helper()
	testutil.Eventually(t, 2*time.Minute, func() error {
		var ready []string
		for _, p := range cpoPods(t, ns) {
			if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && podReady(&p) && p.Labels["app"] == hyperv1.ControlPlaneOperatorName && len(p.OwnerReferences) > 0 {
				ready = append(ready, p.Name)
			}
		}
		leader = holder(t, ns)
		if len(ready) != 2 || !slices.Contains(ready, leader) {
			return fmt.Errorf("ready Deployment pods %v, holder %q", ready, leader)
		}
		standby = ready[0]
		if standby == leader {
			standby = ready[1]
		}
		return nil
	})
	return leader, standby
}

// testArbiterQuiet: over a window of several renewals, the parent writes
// no Lease of any HostedCluster.
func testArbiterQuiet(t *testing.T) {
	time.Sleep(5 * time.Second) // settle after the cluster came up
	from := time.Now()
	time.Sleep(4 * renewInterval)
	to := time.Now()
	list := &hyperv1.HostedClusterList{}
	if err := lc.Env.Client.List(t.Context(), list); err != nil {
		t.Fatal(err)
	}
	events := auditEvents(t)
	for _, hc := range list.Items {
		ns := hyperv1.ControlPlaneNamespace(hc.Namespace, hc.Name)
		parent, renewals := 0, 0
		for _, e := range leaseWritesIn(events, ns, from, to) {
			switch {
			case e.User.Username == hoUser:
				parent++
			case auditlog.Succeeded(e):
				renewals++
			}
		}
		t.Logf("HostedCluster %s/%s: %d Lease writes by the hypershift-operator, %d renewals by its leader in %s", hc.Namespace, hc.Name, parent, renewals, to.Sub(from).Round(time.Second))
		if parent != 0 {
			t.Errorf("HostedCluster %s/%s: the hypershift-operator wrote its Lease %d times while converged", hc.Namespace, hc.Name, parent)
		}
		if renewals < 2 {
			t.Errorf("HostedCluster %s/%s: only %d renewals in the window: the check proves nothing", hc.Namespace, hc.Name, renewals)
		}
	}
}

// testSamePodRestart: kill -9 the leader's process; the kubelet
// restarts the container in the same pod, and the new process, with the
// same identity, takes the Lease back at once, without the parent.
func testSamePodRestart(t *testing.T, ns string) {
	leader, _ := awaitLeaderAndStandby(t, ns)
	pid := cpoPID(t, ns, leader)
	killed := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var resumed time.Time
	testutil.Eventually(t, leaseDuration+margin, func() error {
		for _, e := range leaseWritesIn(auditEvents(t), ns, killed, time.Now()) {
			if podOf(e) == leader && auditlog.Succeeded(e) {
				resumed = e.RequestReceivedTimestamp.Time
				return nil
			}
		}
		return fmt.Errorf("no Lease write by %s since the kill", leader)
	})
	took := resumed.Sub(killed)
	t.Logf("same-pod restart: %s's new process wrote the Lease %s after the kill -9 of the old one", leader, took.Round(time.Millisecond))
	if newPID, ok := lc.PodPID(t.Context(), ns, leader, hyperv1.ControlPlaneOperatorName); !ok || newPID == pid {
		t.Errorf("the pod %s has no new process (%d, %v)", leader, newPID, ok)
	}
	if took >= leaseDuration {
		t.Errorf("the restarted holder resumed after %s, not before the lease duration %s", took, leaseDuration)
	}
	assertParentWroteNothing(t, ns, killed)
}

// testFrozenLeaderKept: a leader frozen with SIGSTOP in a pod that runs is
// not gone: the parent leaves its Lease alone, and the standby takes over
// only once the lease duration has passed since the leader's last renewal.
func testFrozenLeaderKept(t *testing.T, ns string) {
	leader, standby := awaitLeaderAndStandby(t, ns)
	pid := cpoPID(t, ns, leader)
	frozen := time.Now()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	thawed := false
	thaw := func() {
		if !thawed {
			thawed = true
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}
	defer thaw()
	testutil.Eventually(t, leaseDuration+retryPeriod+margin, func() error {
		if h := holder(t, ns); h != standby {
			return fmt.Errorf("holder %q", h)
		}
		return nil
	})
	restarts := cpoRestarts(t, ns, leader)
	thaw()
	var lastRenewal, takeover time.Time
	for _, e := range leaseWritesIn(auditEvents(t), ns, frozen.Add(-leaseDuration), time.Now()) {
		switch {
		case !auditlog.Succeeded(e):
		case podOf(e) == leader && e.RequestReceivedTimestamp.Time.Before(frozen):
			lastRenewal = e.RequestReceivedTimestamp.Time
		case podOf(e) == standby && takeover.IsZero() && e.RequestReceivedTimestamp.After(frozen):
			takeover = e.RequestReceivedTimestamp.Time
		}
	}
	if lastRenewal.IsZero() || takeover.IsZero() {
		t.Fatalf("the audit log shows no renewal by %s before the freeze (%v) or no takeover by %s (%v)", leader, lastRenewal, standby, takeover)
	}
	t.Logf("frozen leader %s, pod running: %s took over %s after the freeze, %s after the leader's last renewal", leader, standby,
		takeover.Sub(frozen).Round(time.Millisecond), takeover.Sub(lastRenewal).Round(time.Millisecond))
	if took := takeover.Sub(lastRenewal); took < leaseDuration-100*time.Millisecond {
		t.Errorf("the standby took over %s after the frozen leader's last renewal, before the lease duration %s", took, leaseDuration)
	}
	assertParentWroteNothing(t, ns, frozen)
	// The thawed process finds it lost the Lease and exits; its pod runs
	// it again, as a standby. Until the kubelet has seen the exit the pod
	// still reads ready, so the next story waits for the restart itself:
	// a real kubelet may hold the new container back (crash-loop back-off)
	// and a standby in back-off cannot take over.
	awaitRestarted(t, ns, leader, restarts)
	awaitLeaderAndStandby(t, ns)
}

// cpoRestarts is the restart count of pod's control-plane-operator
// container.
func cpoRestarts(t *testing.T, ns, pod string) int32 {
	t.Helper()
	p := &corev1.Pod{}
	if err := lc.Env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: pod}, p); err != nil {
		t.Fatal(err)
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == hyperv1.ControlPlaneOperatorName {
			return cs.RestartCount
		}
	}
	t.Fatalf("pod %s has no %s container status", pod, hyperv1.ControlPlaneOperatorName)
	return 0
}

// awaitRestarted waits until pod's control-plane-operator container has
// restarted more than before times and runs again, ready.
func awaitRestarted(t *testing.T, ns, pod string, before int32) {
	t.Helper()
	testutil.Eventually(t, 2*time.Minute, func() error {
		p := &corev1.Pod{}
		if err := lc.Env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: pod}, p); err != nil {
			return err
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == hyperv1.ControlPlaneOperatorName && cs.RestartCount > before && cs.State.Running != nil && cs.Ready {
				return nil
			}
		}
		return fmt.Errorf("pod %s: the %s container has not run again, ready, since restart %d", pod, hyperv1.ControlPlaneOperatorName, before)
	})
}

// testForceDeletedLeader: freeze the leader, cut its pod off from the API
// server as a partitioned node is, and force-delete the pod: the parent
// releases the Lease, the standby leads within 2s; thawed once its token
// no longer authenticates, the old process's requests are refused, and
// none of its writes is accepted.
func testForceDeletedLeader(t *testing.T, ns string) {
	leader, standby := awaitLeaderAndStandby(t, ns)
	pid := cpoPID(t, ns, leader)
	heal, err := lc.Partition(t.Context(), ns, leader)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := heal(); err != nil {
			t.Errorf("healing the partition: %v", err)
		}
	}()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Kill(pid, syscall.SIGCONT) }()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: leader}}
	// The parent may release the Lease before this test's goroutine runs
	// again after the delete returns: the window opens before the request,
	// and the delay is measured from the API server's own record of it.
	sent := time.Now()
	if err := lc.Env.Client.Delete(t.Context(), pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, leaseDuration+margin, func() error {
		if h := holder(t, ns); h == "" || h == leader {
			return fmt.Errorf("holder %q", h)
		}
		return nil
	})
	released, takeover := parentRelease(t, ns, sent)
	deleted := podDeleted(t, ns, leader, sent)
	t.Logf("force-deleted frozen leader %s: the parent released its Lease %s after the delete, %s led %s after it",
		leader, released.Sub(deleted).Round(time.Millisecond), holder(t, ns), takeover.Sub(deleted).Round(time.Millisecond))
	if took := takeover.Sub(deleted); took > arbiterBound {
		t.Errorf("the standby led %s after the leader's pod was force-deleted, want at most %s", took, arbiterBound)
	}
	if h := holder(t, ns); h != standby {
		t.Logf("the Lease went to %s, a replacement pod, not the standby %s", h, standby)
	}
	assertReleaseEvent(t, leader, "not found", deleted)

	// Thaw the old process once its token is dead.
	time.Sleep(time.Until(deleted.Add(leasearbiter.TokenWindow - 2*time.Second)))
	thawed := time.Now()
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		// Frozen for less than its liveness probe's three periods, and
		// on a node cut off from the API server, nothing kills it: had
		// its kubelet heard of the delete, the story would prove nothing.
		t.Fatalf("the frozen process %d of the force-deleted pod %s is gone before the thaw: %v", pid, leader, err)
	}
	// The old process sends its next request within a retry period or
	// two of the thaw, or exits without one: the Lease watch's events
	// that reached it while it was frozen may show it the successor
	// before its renewal timer fires, and a loss ends the process
	// (support/leaderelection); the kubelet's restart back-off may hold
	// the next container beyond this window. Then every request since
	// the delete is checked.
	var unauthenticated, refused int
	exited := false
	testutil.Eventually(t, 2*retryPeriod+margin, func() error {
		unauthenticated, refused = 0, 0
		for _, e := range auditEvents(t) {
			at := e.RequestReceivedTimestamp.Time
			switch {
			case at.Before(thawed):
			case podOf(e) == leader && !auditlog.Succeeded(e):
				refused++
			case podOf(e) == "" && auditlog.Code(e) == 401 && strings.HasPrefix(e.UserAgent, hyperv1.ControlPlaneOperatorName+"/"):
				// Every other control-plane-operator's token authenticates:
				// a 401 is the deleted pod's.
				unauthenticated++
			}
		}
		if unauthenticated+refused == 0 {
			if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
				exited = true
				return nil
			}
			return errors.New("after the thaw the old process sent no request yet, and still runs")
		}
		return nil
	})
	for _, e := range auditEvents(t) {
		at := e.RequestReceivedTimestamp.Time
		switch {
		case at.Before(deleted) || podOf(e) != leader || !auditlog.Succeeded(e):
		case auditlog.IsWrite(e):
			t.Errorf("a write by the force-deleted pod %s was accepted: %s %s", leader, e.Verb, e.RequestURI)
		case at.After(thawed):
			t.Errorf("after the thaw a request by the force-deleted pod %s was accepted: %s %s", leader, e.Verb, e.RequestURI)
		}
	}
	if exited {
		t.Logf("after the thaw the old process exited before it sent a request")
		return
	}
	t.Logf("after the thaw the old process's requests: %d refused with 401, %d refused after authentication", unauthenticated, refused)
}

// testFailedLeader: a control-plane-operator pod with restartPolicy Never
// (a Deployment allows only Always) leads; kill -9 its process and the
// kubelet reports the pod Failed: the parent releases the Lease and a
// standby leads within 2s.
func testFailedLeader(t *testing.T, ns string) {
	awaitLeaderAndStandby(t, ns)
	const name = "cpo-restart-never"
	template := deploymentTemplate(t, ns)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: template.Labels}, Spec: *template.Spec.DeepCopy()}
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	if err := lc.Env.Client.Create(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lc.Env.Client.Delete(t.Context(), pod) }()
	makeLeader(t, ns, name)
	pid := cpoPID(t, ns, name)
	killed := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, leaseDuration+margin, func() error {
		if h := holder(t, ns); h == "" || h == name {
			return fmt.Errorf("holder %q", h)
		}
		return nil
	})
	released, takeover := parentRelease(t, ns, killed)
	// The kubelet's last status write before the release is the one
	// that reported the pod Failed.
	var failedAt time.Time
	for _, e := range auditEvents(t) {
		at := e.RequestReceivedTimestamp.Time
		if e.ObjectRef != nil && e.ObjectRef.Namespace == ns && e.ObjectRef.Name == name && e.ObjectRef.Subresource == "status" &&
			auditlog.Succeeded(e) && at.After(killed) && at.Before(released) {
			failedAt = at
		}
	}
	current := &corev1.Pod{}
	if err := lc.Env.Client.Get(t.Context(), client.ObjectKeyFromObject(pod), current); err != nil || current.Status.Phase != corev1.PodFailed || failedAt.IsZero() {
		t.Fatalf("the pod is not reported Failed (phase %q, status written at %v): %v", current.Status.Phase, failedAt, err)
	}
	t.Logf("failed leader %s: reported Failed %s after the kill; the parent released its Lease %s after that, %s led %s after it",
		name, failedAt.Sub(killed).Round(time.Millisecond), released.Sub(failedAt).Round(time.Millisecond), holder(t, ns), takeover.Sub(failedAt).Round(time.Millisecond))
	if took := takeover.Sub(failedAt); took > arbiterBound {
		t.Errorf("a standby led %s after the leader's pod was reported Failed, want at most %s", took, arbiterBound)
	}
	assertReleaseEvent(t, name, "phase Failed", killed)
}

// makeLeader makes pod name lead: it stops the leader gracefully (it
// releases the Lease) while every other candidate is frozen.
func makeLeader(t *testing.T, ns, name string) {
	t.Helper()
	for attempt := 0; holder(t, ns) != name; attempt++ {
		if attempt == 3 {
			t.Fatalf("pod %s did not take the Lease in 3 handovers", name)
		}
		testutil.Eventually(t, time.Minute, func() error {
			p := &corev1.Pod{}
			if err := lc.Env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, p); err != nil || !podReady(p) {
				return fmt.Errorf("pod %s is not ready (%w)", name, err)
			}
			return nil
		})
		leader := holder(t, ns)
		var frozen []int
		for _, p := range cpoPods(t, ns) {
			if pid, ok := lc.PodPID(t.Context(), ns, p.Name, hyperv1.ControlPlaneOperatorName); ok && p.Name != name && p.Name != leader {
				if syscall.Kill(pid, syscall.SIGSTOP) == nil {
					frozen = append(frozen, pid)
				}
			}
		}
		if err := lc.Env.Client.Delete(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: leader}}); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, leaseDuration+margin, func() error {
			if h := holder(t, ns); h == "" || h == leader {
				return fmt.Errorf("holder %q", h)
			}
			return nil
		})
		for _, pid := range frozen {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}
}

// parentRelease returns when, after since, the parent's release of the
// Lease was received and when the next holder's first Lease write was.
func parentRelease(t *testing.T, ns string, since time.Time) (released, takeover time.Time) {
	t.Helper()
	scanAudit(t, func(events []auditv1.Event) bool {
		released, takeover = time.Time{}, time.Time{}
		for _, e := range leaseWritesIn(events, ns, since, time.Now()) {
			switch {
			case !auditlog.Succeeded(e):
			case e.User.Username == hoUser && released.IsZero():
				released = e.RequestReceivedTimestamp.Time
			case !released.IsZero() && takeover.IsZero() && podOf(e) != "":
				takeover = e.RequestReceivedTimestamp.Time
			}
		}
		return !released.IsZero() && !takeover.IsZero()
	})
	if released.IsZero() || takeover.IsZero() {
		t.Fatalf("the audit log shows no release by the hypershift-operator (%v) or no takeover after it (%v)", released, takeover)
	}
	return released, takeover
}

// scanAudit calls found with the audit log until it returns true, for up
// to 5 seconds: the log is written as each request completes, so a write
// the test has seen through the API may reach the file a moment later.
func scanAudit(t *testing.T, found func(events []auditv1.Event) bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !found(auditEvents(t)) && time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond)
	}
}

// podDeleted returns when the API server received the delete of the pod
// ns/name sent at or after since, by its audit log.
func podDeleted(t *testing.T, ns, name string, since time.Time) time.Time {
	t.Helper()
	for _, e := range auditEvents(t) {
		if e.Verb == "delete" && e.ObjectRef != nil && e.ObjectRef.Resource == "pods" && e.ObjectRef.Subresource == "" &&
			e.ObjectRef.Namespace == ns && e.ObjectRef.Name == name && auditlog.Succeeded(e) && !e.RequestReceivedTimestamp.Time.Before(since) {
			return e.RequestReceivedTimestamp.Time
		}
	}
	t.Fatalf("the audit log shows no delete of the pod %s/%s", ns, name)
	return time.Time{}
}

// assertParentWroteNothing checks that the hypershift-operator wrote no
// Lease in ns since since.
func assertParentWroteNothing(t *testing.T, ns string, since time.Time) {
	t.Helper()
	for _, e := range leaseWritesIn(auditEvents(t), ns, since, time.Now()) {
		if e.User.Username == hoUser {
			t.Errorf("the hypershift-operator wrote the Lease of a holder whose pod runs: %s at %s (%d)", e.Verb, e.RequestReceivedTimestamp.Format(time.StampMilli), auditlog.Code(e))
		}
	}
}

// assertReleaseEvent checks the HostedCluster's event for the release.
func assertReleaseEvent(t *testing.T, pod, reason string, since time.Time) {
	t.Helper()
	want := fmt.Sprintf("Lease released for %s: pod gone (%s)", pod, reason)
	awaitLeaseReleasedEvent(t, "arbiter", want, func(note string) bool { return note == want }, since)
}

// awaitLeaseReleasedEvent waits for a LeaseReleased event on HostedCluster
// clusters/cluster, at or after since, whose note matches (want describes
// it), and logs it.
func awaitLeaseReleasedEvent(t *testing.T, cluster, want string, matches func(note string) bool, since time.Time) {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, func() error {
		list := &eventsv1.EventList{}
		if err := lc.Env.Client.List(t.Context(), list, client.InNamespace("clusters")); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Regarding.Name == cluster && e.Reason == "LeaseReleased" && matches(e.Note) && !e.EventTime.Time.Before(since.Add(-time.Second)) {
				t.Logf("event on HostedCluster clusters/%s: %s", cluster, e.Note)
				return nil
			}
		}
		return fmt.Errorf("no event %q on HostedCluster clusters/%s", want, cluster)
	})
}

// leaseWritesIn returns the writes of ns's CPO Lease received in [from, to).
func leaseWritesIn(events []auditv1.Event, ns string, from, to time.Time) []auditv1.Event {
	var out []auditv1.Event
	for _, e := range events {
		at := e.RequestReceivedTimestamp.Time
		if e.ObjectRef != nil && e.ObjectRef.Resource == "leases" && e.ObjectRef.Namespace == ns && e.ObjectRef.Name == hyperv1.ControlPlaneOperatorLeaseName &&
			auditlog.IsWrite(e) && !at.Before(from) && at.Before(to) {
			out = append(out, e)
		}
	}
	slices.SortStableFunc(out, func(a, b auditv1.Event) int {
		return a.RequestReceivedTimestamp.Compare(b.RequestReceivedTimestamp.Time)
	})
	return out
}

// podOf is the pod an audited request's token is bound to, or "".
func podOf(e auditv1.Event) string {
	if pods := e.User.Extra[auditlog.PodNameKey]; len(pods) == 1 {
		return pods[0]
	}
	return ""
}

// cpoPID returns the process of pod's control-plane-operator container.
func cpoPID(t *testing.T, ns, pod string) int {
	t.Helper()
	pid, ok := lc.PodPID(t.Context(), ns, pod, hyperv1.ControlPlaneOperatorName)
	if !ok {
		t.Fatalf("no process for pod %s", pod)
	}
	return pid
}

// deploymentTemplate returns the CPO Deployment's pod template.
func deploymentTemplate(t *testing.T, ns string) corev1.PodTemplateSpec {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := lc.Env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: hyperv1.ControlPlaneOperatorName}, d); err != nil {
		t.Fatal(err)
	}
	return d.Spec.Template
}
