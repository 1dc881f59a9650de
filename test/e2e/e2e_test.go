package e2e

import (
	"bytes"
	"fmt"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/cmd/cluster"
	"github.com/hypershift-le/hypershift/cmd/get"
	"github.com/hypershift-le/hypershift/cmd/install"
	"github.com/hypershift-le/hypershift/support/testutil"
	"github.com/hypershift-le/hypershift/test/auditlog"
	"github.com/hypershift-le/hypershift/test/localcluster"
	"github.com/hypershift-le/hypershift/test/metricsscrape"
)

func installOperator(t *testing.T, image string, extra ...string) {
	t.Helper()
	args := append([]string{"--hypershift-image=" + image, "--wait-until-available", "--timeout=3m",
		"--insecure-registries=" + lc.Registry.Host,
		"--cpo-leader-elect-lease-duration=10s", "--cpo-leader-elect-renew-deadline=7s", "--cpo-leader-elect-retry-period=2s"}, lc.IsolationArgs()...)
	execute(t, install.NewCommand(), append(args, extra...)...)
}

// TestEndToEnd runs the stories in order on one local cluster.
func TestEndToEnd(t *testing.T) {
	installOperator(t, lc.Registry.Image("hypershift", "latest"))
	t.Run("create", testCreate)
	t.Run("hosted API", testHostedAPI)
	t.Run("etcd backup", testEtcdBackup)
	t.Run("etcd restore", testEtcdRestore)
	t.Run("a node joins the hosted cluster", testNodeJoins)
	t.Run("machines of platform Pod", testMachines)
	t.Run("refused by the management cluster", testRefused)
	t.Run("upgrade", testUpgrade)
	t.Run("fencing", testFencing)
	t.Run("highly available", testHighlyAvailable)
	t.Run("namespace deleted", testNamespaceDeleted)
	t.Run("control plane gone", testControlPlaneGone)
	t.Run("management API frozen", testManagementOutage)
	t.Run("destroy", testDestroy)
	t.Run("parent arbitrates", testArbiter)
	t.Run("node loss", testNodeLoss)
	t.Run("negative control", testNegativeControl)
}

// testCreate: a mistyped release tag stops create --wait at once with the
// reason, and update cluster fixes it; the CPO pod runs with its
// ServiceAccount's token, holds the Lease, and status and the CLI show it.
// New credentials given to update cluster reach the control-plane
// namespace within seconds, without a CPO restart.
func testCreate(t *testing.T) {
	release := lc.Registry.Releases[localcluster.Versions[0]]
	started := time.Now()
	out, err := tryExecute(t, cluster.NewCreateCommand(), createArgs(t, "demo", hyperv1.SingleReplica, "--release-image="+release+"-typo", "--wait", "--timeout=3m")...)
	if err == nil || !strings.Contains(err.Error(), "cannot become Available until its spec changes: ValidReleaseImage=False (ReleaseImageNotFound)") {
		t.Fatalf("create --wait with a release tag that does not exist: %v\n%s", err, out)
	}
	t.Logf("create --wait gave up after %s: %v", time.Since(started).Round(time.Millisecond), err)
	out = execute(t, cluster.NewUpdateCommand(), "cluster", "demo", "-n", "clusters", "--release-image="+release, "--wait", "--timeout=6m")
	t.Logf("hypershift update cluster demo --release-image --wait:\n%s", out)
	testutil.Eventually(t, time.Minute, func() error {
		_, err := hosted(t, "demo").client.Discovery().ServerVersion()
		return err
	})
	ns := controlPlaneNamespace("demo")
	var pod string
	testutil.Eventually(t, time.Minute, func() error {
		pods := cpoPods(t, ns)
		if len(pods) != 1 || pods[0].Status.Phase != corev1.PodRunning {
			return fmt.Errorf("CPO pods: %d", len(pods))
		}
		pod = pods[0].Name
		if h := holder(t, ns); h != pod {
			return fmt.Errorf("the Lease is held by %q, want the pod %s", h, pod)
		}
		return nil
	})
	writes := cpoWrites(t, ns)
	if len(writes) == 0 {
		t.Fatal("the CPO made no write with its own token")
	}
	for _, w := range writes {
		if w.Pod != pod {
			t.Errorf("a CPO write came from pod %s, not %s: %v", w.Pod, pod, w)
		}
	}
	testutil.Eventually(t, time.Minute, func() error {
		hc := &hyperv1.HostedCluster{}
		if err := lc.Env.Client.Get(t.Context(), client.ObjectKey{Namespace: "clusters", Name: "demo"}, hc); err != nil {
			return err
		}
		if hc.Status.ControlPlaneOperator == nil || hc.Status.ControlPlaneOperator.HolderIdentity != pod {
			return fmt.Errorf("status.controlPlaneOperator = %+v", hc.Status.ControlPlaneOperator)
		}
		return nil
	})
	out = execute(t, get.NewCommand(), "leaders", "-A")
	if !strings.Contains(out, pod) {
		t.Errorf("hypershift get leaders does not show %s:\n%s", pod, out)
	}
	t.Logf("hypershift get leaders -A:\n%s", out)

	// Converged, the CPO writes nothing but its Lease.
	time.Sleep(5 * time.Second)
	quiet := time.Now()
	time.Sleep(20 * time.Second)
	for _, w := range cpoWrites(t, ns) {
		if !w.Lease() && w.At.After(quiet) {
			t.Errorf("the converged CPO wrote %v", w)
		}
	}

	credentials := `{"auths":{"registry.example.com":{"auth":"dXNlcjpyb3RhdGVk"}}}`
	changed := time.Now()
	execute(t, cluster.NewUpdateCommand(), "cluster", "demo", "-n", "clusters", "--pull-secret="+pullSecret(t, credentials))
	testutil.Eventually(t, 30*time.Second, func() error {
		copied := &corev1.Secret{}
		if err := lc.Env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: hyperv1.PullSecretName}, copied); err != nil {
			return err
		}
		if string(copied.Data[corev1.DockerConfigJsonKey]) != credentials {
			return fmt.Errorf("the control-plane namespace's pull secret is not the new one")
		}
		return nil
	})
	t.Logf("the new pull secret reached %s in %s", ns, time.Since(changed).Round(time.Millisecond))
	pods := cpoPods(t, ns)
	if len(pods) != 1 || pods[0].Name != pod || pods[0].Status.ContainerStatuses[0].RestartCount != 0 {
		t.Fatalf("the CPO was restarted for new credentials: was %s, now %d pods", pod, len(pods))
	}

	// The CPO pod serves its metrics over HTTPS to the scrapers the
	// management API server authorizes, through the ClusterRoleBinding the
	// HO made for it.
	scrapers := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "e2e-metrics"}}
	if err := lc.Env.Client.Create(t.Context(), scrapers); err != nil {
		t.Fatal(err)
	}
	metricsscrape.ExpectAuthorized(t, lc.Env.Client, scrapers.Name, net.JoinHostPort(pods[0].Status.PodIP, strconv.Itoa(hyperv1.MetricsPort)),
		"hypershift_leader_election_is_leader")
}

// upgrade runs v1 -> v2 -> v1 -> v2 on cluster name, waiting each time until
// the new CPO pod leads.
func upgrade(t *testing.T, name string) *podRecorder {
	t.Helper()
	ns := controlPlaneNamespace(name)
	recorder := recordPods(t, ns)
	rolledOut := func(image string) {
		t.Helper()
		testutil.Eventually(t, 2*time.Minute, func() error {
			h := holder(t, ns)
			if h == "" || recorder.release(h) != image {
				return fmt.Errorf("holder %q operates on %q, want %s", h, recorder.release(h), image)
			}
			for _, p := range cpoPods(t, ns) {
				if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil && recorder.release(p.Name) != image {
					return fmt.Errorf("pod %s of the old release still runs", p.Name)
				}
			}
			return nil
		})
	}
	pins := map[string]string{}
	for _, version := range []string{localcluster.Versions[1], localcluster.Versions[0]} {
		tag := lc.Registry.Releases[version]
		setRelease(t, name, tag)
		// The CPO operates on the payload the HO read, pinned by digest.
		pins[version] = pinnedRelease(t, name, tag)
		rolledOut(pins[version])
		t.Logf("upgraded %s to %s (%s); the Lease is held by %s", name, version, pins[version], holder(t, ns))
	}
	// Back to the first upgrade's release, by a tag that moves: a re-push
	// changes what the tag names, which the HO reports and does not roll
	// out until the user accepts the new digest.
	recorder.moved = moveTag(t, name, pins[localcluster.Versions[0]], pins[localcluster.Versions[1]])
	rolledOut(pins[localcluster.Versions[1]])
	t.Logf("upgraded %s to %s (%s) by accepting its moved tag; the Lease is held by %s", name, localcluster.Versions[1], pins[localcluster.Versions[1]], holder(t, ns))
	time.Sleep(3 * time.Second)
	return recorder
}

// movingTag is the tag of the release payloads the upgrade story moves.
const movingTag = "e2e-moving"

// moveTag points HostedCluster name at movingTag, naming the payload it
// runs (pinned as current: nothing rolls out), then moves the tag to the
// payload pinned as next, and waits until the HO reports the move
// (ReleaseImageTagMoved) while the control-plane-operator keeps running
// current; then it accepts the new digest with the CLI, as a user would,
// and returns the window in which the tag had moved and was not accepted.
func moveTag(t *testing.T, name, current, next string) movedTag {
	t.Helper()
	ctx := t.Context()
	ns := controlPlaneNamespace(name)
	currentTag := lc.Registry.Releases[localcluster.Versions[0]]
	repository := currentTag[strings.LastIndex(currentTag, "/")+1 : strings.LastIndex(currentTag, ":")]
	if err := lc.Registry.Retag(ctx, repository, localcluster.Versions[0], movingTag); err != nil {
		t.Fatal(err)
	}
	moving := lc.Registry.Image(repository, movingTag)
	setRelease(t, name, moving)
	if pinned := pinnedRelease(t, name, moving); pinned != current {
		t.Fatalf("the moving tag, naming the running payload, was pinned as %s; want %s", pinned, current)
	}
	movedAt := time.Now()
	if err := lc.Registry.Retag(ctx, repository, localcluster.Versions[1], movingTag); err != nil {
		t.Fatal(err)
	}
	_, digest, _ := strings.Cut(next, "@")
	// The HO reads the tag again on its next pass: a change of the
	// HostedCluster makes one.
	annotate(t, name, "e2e.hypershift.openshift.io/poke", movedAt.Format(time.RFC3339Nano))
	testutil.Eventually(t, time.Minute, func() error {
		hc := &hyperv1.HostedCluster{}
		if err := lc.Env.Client.Get(ctx, client.ObjectKey{Namespace: "clusters", Name: name}, hc); err != nil {
			return err
		}
		c := meta.FindStatusCondition(hc.Status.Conditions, hyperv1.ReleaseImageTagMoved)
		if c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, digest) {
			return fmt.Errorf("%s = %+v, want True naming %s", hyperv1.ReleaseImageTagMoved, c, digest)
		}
		if hc.Status.Version == nil || hc.Status.Version.Desired.Image != current {
			return fmt.Errorf("status.version.desired %+v, want %s until the move is accepted", hc.Status.Version, current)
		}
		return nil
	})
	// A few passes later nothing has rolled out: the CPO still runs the
	// payload the HO validated.
	time.Sleep(5 * time.Second)
	for _, p := range cpoPods(t, ns) {
		if p.DeletionTimestamp != nil || (p.Status.Phase != corev1.PodRunning && p.Status.Phase != corev1.PodPending) {
			continue
		}
		if image := envValue(p, "OPERATE_ON_RELEASE_IMAGE"); image != current {
			t.Fatalf("control-plane-operator pod %s operates on %s after the tag moved; want %s until the move is accepted", p.Name, image, current)
		}
	}
	t.Logf("the tag %s moved to %s: reported, not rolled out", moving, digest)
	acceptedAt := time.Now()
	execute(t, cluster.NewUpdateCommand(), "cluster", name, "-n", "clusters", "--accept-release-digest="+digest)
	return movedTag{from: movedAt, to: acceptedAt, image: next}
}

// movedTag is when a tag had moved to image and the move was not accepted.
type movedTag struct {
	from, to time.Time
	image    string
}

// annotate sets an annotation of HostedCluster name.
func annotate(t *testing.T, name, key, value string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		hc := &hyperv1.HostedCluster{}
		if err := lc.Env.Client.Get(t.Context(), client.ObjectKey{Namespace: "clusters", Name: name}, hc); err != nil {
			return err
		}
		metav1.SetMetaDataAnnotation(&hc.ObjectMeta, key, value)
		return lc.Env.Client.Update(t.Context(), hc)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// envValue is the value of the first container's environment variable
// key in pod p.
func envValue(p corev1.Pod, key string) string {
	for _, e := range p.Spec.Containers[0].Env {
		if e.Name == key {
			return e.Value
		}
	}
	return ""
}

// testUpgrade: Recreate removes the old pod before the new one is created,
// and the audit log shows one writer at a time and no old-release write
// after the new release's first.
func testUpgrade(t *testing.T) {
	ns := controlPlaneNamespace("demo")
	recorder := upgrade(t, "demo")
	writes := cpoWrites(t, ns)
	if v := auditlog.OutsideHoldings(writes, auditlog.ByPod); len(v) != 0 {
		t.Errorf("%d CPO writes outside their pod's holding: %v", len(v), v)
	}
	// After a pod of a release first writes, no pod of another release writes
	// until the next upgrade's pod writes.
	for i := 1; i < len(writes); i++ {
		prev, cur := writes[i-1], writes[i]
		if prev.Pod != cur.Pod && recorder.release(prev.Pod) != recorder.release(cur.Pod) {
			for _, later := range writes[i:] {
				if later.Pod == prev.Pod {
					t.Errorf("old pod %s wrote after new pod %s's first write: %v", prev.Pod, cur.Pod, later)
				}
			}
		}
	}
	// Recreate: every pod is created only after every pod of another
	// release created before it has ended (its containers stopped).
	created, ended := podLifetimes(t, ns)
	checked := 0
	for newPod, createdAt := range created {
		for oldPod, oldCreated := range created {
			if recorder.release(newPod) == "" || recorder.release(oldPod) == "" || recorder.release(oldPod) == recorder.release(newPod) || !oldCreated.Before(createdAt) {
				continue
			}
			checked++
			endedAt, over := ended[oldPod]
			if !over || !endedAt.Before(createdAt) {
				t.Errorf("Recreate: pod %s was created at %s while old pod %s had not ended yet (ended %v at %s)",
					newPod, createdAt.Format(time.StampMicro), oldPod, over, endedAt.Format(time.StampMicro))
			}
		}
	}
	if checked == 0 {
		t.Error("no old/new pod pair found in the audit log: the Recreate check proves nothing")
	}
	t.Logf("%d CPO writes, all inside their pod's holding; %d old/new pod pairs checked", len(writes), checked)
	// While the tag had moved and the move was not accepted, no CPO that
	// read the payload it moved to wrote anything.
	moved := recorder.moved
	inWindow := 0
	for _, w := range writes {
		if w.At.Before(moved.from) || w.At.After(moved.to) {
			continue
		}
		inWindow++
		if recorder.release(w.Pod) == moved.image {
			t.Errorf("CPO pod %s, of the payload the tag moved to, wrote before the move was accepted: %v", w.Pod, w)
		}
	}
	t.Logf("%d CPO writes while the tag had moved, none by a CPO of the payload it moved to", inWindow)

	// The hosted cluster runs the last release, and its data survived.
	testutil.Eventually(t, 5*time.Minute, func() error {
		hc := &hyperv1.HostedCluster{}
		if err := lc.Env.Client.Get(t.Context(), client.ObjectKey{Namespace: "clusters", Name: "demo"}, hc); err != nil {
			return err
		}
		if v := hc.Status.Version; v == nil || len(v.History) == 0 || v.History[0].Version != localcluster.Versions[1] || v.History[0].State != "Completed" {
			return fmt.Errorf("version %+v", hc.Status.Version)
		}
		return nil
	})
	hosted(t, "demo").awaitData(t, time.Minute)
	t.Log("after the upgrades the hosted API answers, with its data")
}

// testFencing: a CPO pod that does not hold the Lease (election off, the
// test's own pod) has every write refused by the API server, while the
// holder's writes go through.
func testFencing(t *testing.T) {
	ns := controlPlaneNamespace("demo")
	hc := &hyperv1.HostedCluster{}
	if err := lc.Env.Client.Get(t.Context(), client.ObjectKey{Namespace: "clusters", Name: "demo"}, hc); err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(hc.Status.Conditions, "LeaderFencing"); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("LeaderFencing = %+v", c)
	}
	d := &appsv1.Deployment{}
	if err := lc.Env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "control-plane-operator"}, d); err != nil {
		t.Fatal(err)
	}
	spec := d.Spec.Template.Spec.DeepCopy()
	for i, arg := range spec.Containers[0].Args {
		if arg == "--leader-elect=true" {
			spec.Containers[0].Args[i] = "--leader-elect=false"
		}
	}
	rogue := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rogue-control-plane-operator"}, Spec: *spec}
	if err := lc.Env.Client.Create(t.Context(), rogue); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, time.Minute, func() error {
		p := &corev1.Pod{}
		if err := lc.Env.Client.Get(t.Context(), client.ObjectKeyFromObject(rogue), p); err != nil {
			return err
		}
		if !podReady(p) {
			return fmt.Errorf("the rogue pod is not ready")
		}
		return nil
	})
	// Freeze the holder (SIGSTOP, shorter than its renew deadline) and make
	// a change both CPOs react to: only the rogue can act on it, and must
	// be refused; once thawed, the holder repairs it.
	holderPod := holder(t, ns)
	pid, ok := lc.PodPID(t.Context(), ns, holderPod, "control-plane-operator")
	if !ok {
		t.Fatalf("no process for the holder %s", holderPod)
	}
	started := time.Now()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	etcd := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "etcd-client"}}
	if err := lc.Env.Client.Delete(t.Context(), etcd); err != nil {
		_ = syscall.Kill(pid, syscall.SIGCONT)
		t.Fatal(err)
	}
	time.Sleep(4 * time.Second)
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, time.Minute, func() error {
		return lc.Env.Client.Get(t.Context(), client.ObjectKeyFromObject(etcd), &corev1.Service{})
	})
	time.Sleep(2 * time.Second)
	var refused, accepted int
	for _, e := range auditEvents(t) {
		pods := e.User.Extra[auditlog.PodNameKey]
		if len(pods) != 1 || e.ObjectRef == nil || e.ObjectRef.Namespace != ns || e.ObjectRef.Resource == "leases" || !auditlog.IsWrite(e) || e.RequestReceivedTimestamp.Time.Before(started) {
			continue
		}
		switch {
		case pods[0] == rogue.Name && auditlog.Succeeded(e):
			accepted++
			t.Errorf("the rogue pod's write went through: %s %s/%s", e.Verb, e.ObjectRef.Resource, e.ObjectRef.Name)
		case pods[0] == rogue.Name:
			refused++
		case e.ResponseStatus != nil && e.ResponseStatus.Code == 403:
			t.Errorf("the holder %s had a write refused: %s %s/%s (%d)", pods[0], e.Verb, e.ObjectRef.Resource, e.ObjectRef.Name, e.ResponseStatus.Code)
		}
	}
	if refused == 0 {
		t.Fatal("the rogue pod made no write at all: the check proves nothing")
	}
	t.Logf("the API server refused %d writes by the rogue pod, accepted %d", refused, accepted)
	if log, err := lc.PodLog(t.Context(), ns, rogue.Name, "control-plane-operator"); err != nil || !strings.Contains(log, "Write refused by the API server: this pod does not hold the Lease") || !strings.Contains(log, holderPod) {
		t.Errorf("the rogue pod's log does not report the refusal with the holder %s (%v)", holderPod, err)
	}
	if err := lc.Env.Client.Delete(t.Context(), rogue); err != nil {
		t.Fatal(err)
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// testHighlyAvailable: three etcd members; kill -9 the CPO leader, then
// delete the leader pod; then delete an etcd member: the hosted API
// answers throughout.
func testHighlyAvailable(t *testing.T) {
	createCluster(t, "ha", hyperv1.HighlyAvailable)
	ns := controlPlaneNamespace("ha")
	for _, member := range []string{"etcd-0", "etcd-1", "etcd-2"} {
		p := &corev1.Pod{}
		if err := lc.Env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: member}, p); err != nil || !podReady(p) {
			t.Fatalf("etcd member %s is not ready (%v)", member, err)
		}
	}
	spreadOverNodes(t, ns, map[string]int{"etcd": 3, "kube-apiserver": 3, "kube-controller-manager": 2, "kube-scheduler": 2})
	h := hosted(t, "ha")
	h.keepData(t)
	// A snapshot of three members is taken from one of them.
	backUp(t, "ha", "ha-backup")
	p := h.probe(t)
	var leader string
	testutil.Eventually(t, time.Minute, func() error {
		running := 0
		for _, p := range cpoPods(t, ns) {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		leader = holder(t, ns)
		if running != 2 || leader == "" {
			return fmt.Errorf("%d CPO pods running, holder %q", running, leader)
		}
		return nil
	})

	pid, ok := lc.PodPID(t.Context(), ns, leader, "control-plane-operator")
	if !ok {
		t.Fatalf("no process for pod %s", leader)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	// The kubelet restarts the container in place: the
	// new process has the same pod name, so it may take its own Lease back
	// before the standby's wait runs out. Either way a live process must
	// hold a renewed Lease within LeaseDuration + RetryPeriod.
	testutil.Eventually(t, leaseDuration+retryPeriod+margin, func() error {
		lease := &coordinationv1.Lease{}
		if err := lc.Env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: hyperv1.ControlPlaneOperatorLeaseName}, lease); err != nil {
			return err
		}
		if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" || lease.Spec.RenewTime == nil || !lease.Spec.RenewTime.After(killed) {
			return fmt.Errorf("the Lease was not renewed since the kill: %+v", lease.Spec)
		}
		if newPID, ok := lc.PodPID(t.Context(), ns, *lease.Spec.HolderIdentity, "control-plane-operator"); !ok || newPID == pid {
			return fmt.Errorf("the holder %s has no new process", *lease.Spec.HolderIdentity)
		}
		return nil
	})
	t.Logf("after kill -9 of %s's process, %s holds the Lease again after %s", leader, holder(t, ns), time.Since(killed))

	// Delete the leader pod: it terminates gracefully (releasing the Lease)
	// while its replacement is already being created.
	leader = holder(t, ns)
	pod := &corev1.Pod{}
	if err := lc.Env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: leader}, pod); err != nil {
		t.Fatal(err)
	}
	if err := lc.Env.Client.Delete(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	testutil.Eventually(t, leaseDuration+retryPeriod+margin, func() error {
		if h := holder(t, ns); h == leader || h == "" {
			return fmt.Errorf("holder %q", h)
		}
		return nil
	})
	t.Logf("after deleting pod %s, %s leads after %s", leader, holder(t, ns), time.Since(deleted))
	time.Sleep(3 * time.Second)
	if v := auditlog.OutsideHoldings(cpoWrites(t, ns), auditlog.ByPod); len(v) != 0 {
		t.Errorf("%d CPO writes outside their pod's holding: %v", len(v), v)
	}
	p.finish(t, "while the CPO leader was killed and its pod replaced")

	p = h.probe(t)
	member := &corev1.Pod{}
	if err := lc.Env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "etcd-1"}, member); err != nil {
		t.Fatal(err)
	}
	if err := lc.Env.Client.Delete(t.Context(), member); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 2*time.Minute, func() error {
		back := &corev1.Pod{}
		if err := lc.Env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "etcd-1"}, back); err != nil {
			return err
		}
		if back.UID == member.UID || !podReady(back) {
			return fmt.Errorf("etcd-1 has not rejoined yet")
		}
		return nil
	})
	p.finish(t, "while etcd member etcd-1 was deleted and rejoined")
}

// testDestroy: the namespaces and everything in them go, etcd's claims
// and their data among them, then the admin kubeconfig copies and the
// clusters.
func testDestroy(t *testing.T) {
	for _, name := range []string{"demo", "ha"} {
		volumes := claimsOf(t, controlPlaneNamespace(name))
		if len(volumes) == 0 {
			t.Fatalf("%s has no claims: the check proves nothing", controlPlaneNamespace(name))
		}
		execute(t, cluster.NewDestroyCommand(), "cluster", "--name="+name, "--namespace=clusters", "--wait", "--timeout=4m")
		if err := lc.Env.Client.Get(t.Context(), client.ObjectKey{Name: controlPlaneNamespace(name)}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
			t.Errorf("namespace %s remains (%v)", controlPlaneNamespace(name), err)
		}
		if err := lc.Env.Client.Get(t.Context(), client.ObjectKey{Namespace: "clusters", Name: hyperv1.AdminKubeconfigName(name)}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
			t.Errorf("the admin kubeconfig of %s remains (%v)", name, err)
		}
		volumesGone(t, volumes)
		t.Logf("%s is gone with its %d claims and their data", name, len(volumes))
	}
}

// testNegativeControl: the same upgrade with election off and a surging
// RollingUpdate (a test-only build of the HO) must be caught by the check.
func testNegativeControl(t *testing.T) {
	installOperator(t, unsafeImage, "--enable-fencing=false")
	// Not --wait: without election no CPO renews the Lease, so the
	// HostedCluster's Available stays Unknown (ControlPlaneOperatorSilent).
	// The control plane runs all the same.
	createClusterNoWait(t, "unsafe", hyperv1.SingleReplica)
	ns := controlPlaneNamespace("unsafe")
	testutil.Eventually(t, 6*time.Minute, func() error {
		hcp := &hyperv1.HostedControlPlane{}
		if err := lc.Env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "unsafe"}, hcp); err != nil {
			return err
		}
		if !hcp.Status.Ready {
			return fmt.Errorf("the control plane is not rolled out yet")
		}
		return nil
	})
	recorder := recordPods(t, ns)
	var writes []auditlog.Write
	for _, version := range []string{localcluster.Versions[1], localcluster.Versions[0]} {
		setRelease(t, "unsafe", lc.Registry.Releases[version])
		time.Sleep(15 * time.Second)
	}
	writes = cpoWrites(t, ns)
	v := auditlog.OutsideHoldings(writes, auditlog.ByPod)
	if len(v) == 0 {
		var b bytes.Buffer
		for _, w := range writes {
			fmt.Fprintf(&b, "\n  %v (%s)", w, recorder.release(w.Pod))
		}
		t.Fatalf("without election the check found nothing: it cannot fail. Writes:%s", b.String())
	}
	t.Logf("without election, the check reports %d writes outside any holding, e.g. %v", len(v), v[0])
	execute(t, cluster.NewDestroyCommand(), "cluster", "--name=unsafe", "--namespace=clusters", "--wait", "--timeout=4m")
}

// spreadOverNodes checks that the replicas of each component (by its app
// label, with its replica count) run spread over the nodes pods may be
// scheduled on: no node runs two more than another, so that with as many
// nodes as replicas each runs one.
func spreadOverNodes(t *testing.T, ns string, replicas map[string]int) {
	t.Helper()
	nodeList := &corev1.NodeList{}
	if err := lc.Env.Client.List(t.Context(), nodeList); err != nil {
		t.Fatal(err)
	}
	var schedulable []string
	for _, n := range nodeList.Items {
		tainted := n.Spec.Unschedulable
		for _, taint := range n.Spec.Taints {
			tainted = tainted || taint.Effect == corev1.TaintEffectNoSchedule
		}
		if !tainted {
			schedulable = append(schedulable, n.Name)
		}
	}
	for app, want := range replicas {
		testutil.Eventually(t, time.Minute, func() error {
			pods := &corev1.PodList{}
			if err := lc.Env.Client.List(t.Context(), pods, client.InNamespace(ns), client.MatchingLabels{"app": app}); err != nil {
				return err
			}
			perNode := map[string]int{}
			running := 0
			for _, p := range pods.Items {
				if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
					perNode[p.Spec.NodeName]++
					running++
				}
			}
			if running != want {
				return fmt.Errorf("%d %s pods running, want %d", running, app, want)
			}
			most, least := 0, want
			for _, node := range schedulable {
				most, least = max(most, perNode[node]), min(least, perNode[node])
			}
			if most-least > 1 {
				return fmt.Errorf("%s's %d pods are not spread over the nodes %v: %v", app, want, schedulable, perNode)
			}
			return nil
		})
	}
	t.Logf("etcd, kube-apiserver and the controllers spread over %d nodes", len(schedulable))
}
