package operator_test

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/control-plane-operator/components/etcd"
	"github.com/hypershift-le/hypershift/control-plane-operator/components/kubeapiserver"
	"github.com/hypershift-le/hypershift/control-plane-operator/pki"
	"github.com/hypershift-le/hypershift/support/testutil"
	"github.com/hypershift-le/hypershift/test/auditlog"
	"github.com/hypershift-le/hypershift/test/operatorprocess"
	"github.com/hypershift-le/hypershift/test/testenv"
)

const margin = 3 * time.Second

// awaitComponents waits until the Lease holder applied what a control
// plane gets before any of its pods runs: the Services, the PKI's Secrets
// and etcd's StatefulSet (the other workloads wait for etcd).
func awaitComponents(t *testing.T, cp *controlPlane) {
	t.Helper()
	testutil.Eventually(t, 30*time.Second, func() error {
		for name, obj := range map[string]client.Object{
			etcd.Name:          &appsv1.StatefulSet{},
			kubeapiserver.Name: &corev1.Service{},
			pki.RootCASecret:   &corev1.Secret{},
		} {
			if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: cp.namespace, Name: name}, obj); err != nil {
				return fmt.Errorf("%T %s: %w", obj, name, err)
			}
		}
		return nil
	})
}

// toggle changes the HostedControlPlane so the leader must write again:
// it flips the cluster annotation, which every rendered object carries.
func toggle(t *testing.T, cp *controlPlane) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		hcp := &hyperv1.HostedControlPlane{}
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(cp.hcp), hcp); err != nil {
			return err
		}
		value := "clusters/a"
		if hcp.Annotations[hyperv1.ClusterAnnotation] == value {
			value = "clusters/b"
		}
		if hcp.Annotations == nil {
			hcp.Annotations = map[string]string{}
		}
		hcp.Annotations[hyperv1.ClusterAnnotation] = value
		return env.Client.Update(t.Context(), hcp)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestThreeReplicas runs three CPOs: at every sample exactly one holds the
// Lease, it is a live process named by its POD_NAME, and every write any of
// them made falls inside its own holding, as the audit log shows.
func TestThreeReplicas(t *testing.T) {
	cp := newControlPlane(t, false)
	pods := []string{"cpo-a", "cpo-b", "cpo-c"}
	var cpos []*cpo
	for _, pod := range pods {
		cpos = append(cpos, startCPO(t, cp, pod, cp.releaseImage))
	}
	awaitHolder(t, cp, 30*time.Second, pods...)
	awaitComponents(t, cp)

	samples := 0
	for i := range 40 {
		if i%10 == 0 {
			toggle(t, cp)
		}
		h := holder(t, cp)
		found := false
		for _, c := range cpos {
			found = found || (c.Pod == h)
		}
		if !found {
			t.Fatalf("sample %d: the Lease is held by %q, not by one of %v", i, h, pods)
		}
		samples++
		time.Sleep(100 * time.Millisecond)
	}

	writes := successfulWrites(t, cp.namespace, "cpo-cpo-a", "cpo-cpo-b", "cpo-cpo-c")
	nonLease := 0
	for _, w := range writes {
		if !w.Lease() {
			nonLease++
		}
	}
	if nonLease == 0 {
		t.Fatal("no CPO wrote anything: the holding check would prove nothing")
	}
	if v := auditlog.OutsideHoldings(writes, auditlog.ByUser); len(v) != 0 {
		t.Fatalf("%d writes outside their writer's holding: %v", len(v), v)
	}
	t.Logf("%d samples, one holder each; %d writes, all inside their writer's holding", samples, len(writes))
}

// TestGracefulHandover stops the leader with SIGTERM: it releases the Lease
// and exits 0, and a standby leads within RetryPeriod plus a margin.
func TestGracefulHandover(t *testing.T) {
	cp := newControlPlane(t, false)
	a := startCPO(t, cp, "cpo-a", cp.releaseImage)
	awaitHolder(t, cp, 30*time.Second, "cpo-a")
	b := startCPO(t, cp, "cpo-b", cp.releaseImage)
	awaitComponents(t, cp)
	time.Sleep(2 * time.Second) // b is a running standby

	stopped := time.Now()
	if err := a.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	awaitHolder(t, cp, retryPeriod+margin, b.Pod)
	t.Logf("handover took %s", time.Since(stopped))
	if !a.Exited(10 * time.Second) {
		t.Fatal("the old leader did not exit within 10s of SIGTERM")
	}
	if a.ExitErr() != nil {
		t.Fatalf("the old leader exited with %v, want 0; log:\n%s", a.ExitErr(), operatorprocess.Tail(a.Output(), 2000))
	}
}

// TestCrashTakeover kills the leader: a standby leads within LeaseDuration
// plus RetryPeriod plus a margin, and the dead one wrote nothing after.
func TestCrashTakeover(t *testing.T) {
	cp := newControlPlane(t, false)
	a := startCPO(t, cp, "cpo-a", cp.releaseImage)
	awaitHolder(t, cp, 30*time.Second, "cpo-a")
	b := startCPO(t, cp, "cpo-b", cp.releaseImage)
	awaitComponents(t, cp)

	if err := a.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	a.Exited(5 * time.Second)
	killed := time.Now()
	awaitHolder(t, cp, leaseDuration+retryPeriod+margin, b.Pod)
	t.Logf("takeover took %s", time.Since(killed))
	toggle(t, cp)
	time.Sleep(2 * time.Second)
	for _, w := range successfulWrites(t, cp.namespace, a.user) {
		if w.At.After(killed) {
			t.Errorf("the killed leader wrote after its death: %v", w)
		}
	}
	if v := auditlog.OutsideHoldings(successfulWrites(t, cp.namespace, a.user, b.user), auditlog.ByUser); len(v) != 0 {
		t.Fatalf("writes outside their writer's holding: %v", v)
	}
	assertCachesFilledBeforeLeading(t, cp, b.user)
}

// assertCachesFilledBeforeLeading checks that user, a CPO that came to
// lead, had begun to list and watch every kind its controllers watch while
// it stood by (an informer's first sync is a list, or a watch that sends
// the initial events): its first pass as leader started from warm caches,
// with no list or watch begun after its first Lease write.
func assertCachesFilledBeforeLeading(t *testing.T, cp *controlPlane, user string) {
	t.Helper()
	var led time.Time
	for _, w := range successfulWrites(t, cp.namespace, user) {
		if w.Lease() {
			led = w.At
			break
		}
	}
	if led.IsZero() {
		t.Fatalf("%s never wrote the Lease", user)
	}
	events, err := env.AuditEvents()
	if err != nil {
		t.Fatal(err)
	}
	before := 0
	for _, e := range auditlog.Requests(events) {
		if e.User.Username != user || (e.Verb != "list" && e.Verb != "watch") || e.ObjectRef == nil || e.ObjectRef.Resource == "leases" {
			continue
		}
		if e.RequestReceivedTimestamp.After(led) {
			t.Errorf("%s began to %s %s %.2fs after it came to lead: its caches were not filled while it stood by",
				user, e.Verb, e.ObjectRef.Resource, e.RequestReceivedTimestamp.Sub(led).Seconds())
			continue
		}
		before++
	}
	if before == 0 {
		t.Errorf("%s listed and watched nothing before it came to lead", user)
	}
}

// TestLeaseTampered overwrites the holder as an admin: the leader exits
// non-zero within RenewDeadline plus a margin and writes nothing after.
func TestLeaseTampered(t *testing.T) {
	cp := newControlPlane(t, false)
	a := startCPO(t, cp, "cpo-a", cp.releaseImage)
	awaitHolder(t, cp, 30*time.Second, "cpo-a")
	awaitComponents(t, cp)

	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		lease := &coordinationv1.Lease{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: cp.namespace, Name: hyperv1.ControlPlaneOperatorLeaseName}, lease); err != nil {
			return err
		}
		lease.Spec.HolderIdentity = ptr.To("intruder")
		lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
		return env.Client.Update(t.Context(), lease)
	})
	if err != nil {
		t.Fatal(err)
	}
	tampered := time.Now()
	if !a.Exited(renewDeadline + retryPeriod + margin) {
		t.Fatalf("the leader still runs %s after its Lease was taken", time.Since(tampered))
	}
	t.Logf("the leader exited %s after the tamper", a.ExitedAt().Sub(tampered))
	var exit *exec.ExitError
	if !errors.As(a.ExitErr(), &exit) || exit.ExitCode() == 0 {
		t.Fatalf("the leader exited with %v, want a non-zero status", a.ExitErr())
	}
	if !strings.Contains(a.Output(), "leader election lost") {
		t.Errorf("the log does not say why it exited:\n%s", operatorprocess.Tail(a.Output(), 2000))
	}
	for _, w := range successfulWrites(t, cp.namespace, a.user) {
		if w.At.After(a.ExitedAt()) {
			t.Errorf("it wrote after it exited: %v", w)
		}
	}
}

// TestRenewBlocked denies the leader's Lease updates with a
// ValidatingAdmissionPolicy: it exits within RenewDeadline plus a margin,
// and another takes over once the Lease expires.
func TestRenewBlocked(t *testing.T) {
	cp := newControlPlane(t, false)
	a := startCPO(t, cp, "cpo-a", cp.releaseImage)
	awaitHolder(t, cp, 30*time.Second, "cpo-a")
	b := startCPO(t, cp, "cpo-b", cp.releaseImage)
	awaitComponents(t, cp)

	name := "block-renew-" + cp.namespace
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
						Rule:       admissionregistrationv1.Rule{APIGroups: []string{"coordination.k8s.io"}, APIVersions: []string{"v1"}, Resources: []string{"leases"}},
					},
				}},
			},
			Validations: []admissionregistrationv1.Validation{{
				Expression: fmt.Sprintf("!(request.userInfo.username == %q && request.namespace == %q)", a.user, cp.namespace),
				Message:    "renewals blocked by the test",
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: name, ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	for _, obj := range []client.Object{policy, binding} {
		if err := env.Client.Create(t.Context(), obj); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_ = env.Client.Delete(t.Context(), binding)
		_ = env.Client.Delete(t.Context(), policy)
	})
	blocked := time.Now()
	// The policy takes effect within a second or so; then a renew fails.
	if !a.Exited(time.Second + renewDeadline + retryPeriod + margin) {
		t.Fatalf("the leader still runs %s after its renewals were blocked", time.Since(blocked))
	}
	t.Logf("the leader exited %s after renewals were blocked", a.ExitedAt().Sub(blocked))
	if a.ExitErr() == nil {
		t.Fatal("the leader exited 0, want a non-zero status")
	}
	awaitHolder(t, cp, leaseDuration+retryPeriod+margin, b.Pod)
	t.Logf("the standby took over %s after the leader exited", time.Since(a.ExitedAt()))
}

// TestStalledConnection hangs every request of the leader's process (its
// Lease requests, its watches and its controllers' writes) at a proxy: it
// stops its controllers by its renew deadline, the standby leads and
// writes, then the held bytes reach the API server and the old leader,
// whose renewal now conflicts, exits non-zero. The audit log shows no
// successful write by the old leader after the new one's first write.
func TestStalledConnection(t *testing.T) {
	cp := newControlPlane(t, false)
	proxy, err := testenv.StartProxy(env.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	kubeconfig, err := env.AddUserKubeconfig("cpo-cpo-a")
	if err != nil {
		t.Fatal(err)
	}
	proxied, err := proxy.ProxiedKubeconfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	metricsAddr := operatorprocess.FreeAddress(t)
	a := startCPO(t, cp, "cpo-a", cp.releaseImage, "--kubeconfig="+proxied, "--metrics-bind-address="+metricsAddr)
	awaitHolder(t, cp, 30*time.Second, "cpo-a")
	b := startCPO(t, cp, "cpo-b", cp.releaseImage)
	awaitComponents(t, cp)
	time.Sleep(2 * time.Second) // b is a running standby

	stalled := time.Now()
	proxy.Stall()
	awaitNotLeading(t, metricsAddr, renewDeadline+margin)
	stepped := time.Since(stalled)
	awaitHolder(t, cp, leaseDuration+margin, b.Pod)
	t.Logf("the stalled leader stopped its controllers after %s; the standby led after %s", stepped.Round(time.Millisecond), time.Since(stalled).Round(time.Millisecond))
	toggle(t, cp)
	proxy.Resume()
	if !a.Exited(10 * time.Second) {
		t.Fatal("the old leader did not exit within 10s of getting through again")
	}
	if a.ExitErr() == nil || !strings.Contains(a.Output(), `held by \"cpo-b\"`) {
		t.Fatalf("the old leader exited with %v, want a non-zero status naming cpo-b; log:\n%s", a.ExitErr(), operatorprocess.Tail(a.Output(), 2000))
	}
	time.Sleep(2 * time.Second)

	var bFirst time.Time
	for _, w := range successfulWrites(t, cp.namespace, b.user) {
		bFirst = w.At
		break
	}
	if bFirst.IsZero() {
		t.Fatal("the new leader never wrote")
	}
	aWrites := successfulWrites(t, cp.namespace, a.user)
	if len(aWrites) == 0 {
		t.Fatal("the old leader never wrote: the check proves nothing")
	}
	for _, w := range aWrites {
		if !w.At.Before(bFirst) {
			t.Errorf("the old leader wrote after the new one's first write (%s): %v", bFirst.Format("15:04:05.000"), w)
		}
	}
	if v := auditlog.OutsideHoldings(successfulWrites(t, cp.namespace, a.user, b.user), auditlog.ByUser); len(v) != 0 {
		t.Fatalf("writes outside their writer's holding: %v", v)
	}
}

// awaitNotLeading waits until the process serving metrics at addr reports
// that it runs no leader-only work.
func awaitNotLeading(t *testing.T, addr string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		body := scrape(t, addr)
		for _, line := range strings.Split(body, "\n") {
			if strings.HasPrefix(line, "hypershift_leader_election_is_leader{") && strings.HasSuffix(line, " 0") {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the leader still runs its leader-only work after %s", within)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
