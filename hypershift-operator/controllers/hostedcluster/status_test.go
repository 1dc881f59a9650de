package hostedcluster_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/releaseinfo/releasetest"
	"github.com/hypershift-le/hypershift/support/testutil"
)

// standInCPO returns a client authenticated as the control-plane-operator's
// ServiceAccount, so it has exactly the Role the HO rendered.
func standInCPO(t *testing.T, c *cluster) client.Client {
	t.Helper()
	cfg, err := env.AddUser("system:serviceaccount:"+c.controlPlaneNamespace()+":control-plane-operator", "system:serviceaccounts")
	if err != nil {
		t.Fatal(err)
	}
	cpo, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return cpo
}

// TestLeaderStatus checks that status shows the CPO Lease holder and that a
// renewal, which moves only renewTime, causes no HostedCluster write.
func TestLeaderStatus(t *testing.T) {
	ho := startOperator(t, nil)
	c := newCluster(t, "4.17.0", nil)
	awaitControlPlane(t, c)
	testutil.Eventually(t, converge, func() error { // the Role must exist before the stand-in CPO acts
		return env.Client.Get(t.Context(), client.ObjectKey{Namespace: c.controlPlaneNamespace(), Name: "control-plane-operator"}, &appsv1.Deployment{})
	})
	cpo := standInCPO(t, c)

	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.controlPlaneNamespace(), Name: hyperv1.ControlPlaneOperatorLeaseName},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To("control-plane-operator-6d9f7-abcde"),
			LeaseDurationSeconds: ptr.To[int32](60),
			AcquireTime:          &metav1.MicroTime{Time: time.Now()},
			RenewTime:            &metav1.MicroTime{Time: time.Now()},
			LeaseTransitions:     ptr.To[int32](0),
		},
	}
	testutil.Eventually(t, converge, func() error { return cpo.Create(t.Context(), lease) })
	awaitLeader(t, c, "control-plane-operator-6d9f7-abcde", 0)

	t.Run("when the holder only renews, the HostedCluster is not written", func(t *testing.T) {
		time.Sleep(time.Second) // let writes of the status above settle
		since := time.Now()
		for range 5 {
			lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
			if err := cpo.Update(t.Context(), lease); err != nil {
				t.Fatal(err)
			}
			time.Sleep(500 * time.Millisecond)
		}
		time.Sleep(2 * time.Second)
		if writes := writesBy(t, ho, since, c.hc.Namespace, c.controlPlaneNamespace()); len(writes) != 0 {
			t.Fatalf("5 renewals caused %d writes by the HO:%s", len(writes), describe(writes))
		}
	})

	t.Run("when another pod takes the Lease, status names it", func(t *testing.T) {
		lease.Spec.HolderIdentity = ptr.To("control-plane-operator-6d9f7-fghij")
		lease.Spec.LeaseTransitions = ptr.To[int32](1)
		lease.Spec.AcquireTime = &metav1.MicroTime{Time: time.Now()}
		if err := cpo.Update(t.Context(), lease); err != nil {
			t.Fatal(err)
		}
		awaitLeader(t, c, "control-plane-operator-6d9f7-fghij", 1)
		for _, pod := range []string{"control-plane-operator-6d9f7-abcde", "control-plane-operator-6d9f7-fghij"} {
			awaitEvent(t, c.hc, corev1.EventTypeNormal, "LeaderElected", "control-plane-operator "+pod+" became leader")
		}
	})
}

// awaitEvent waits for an event on hc of type eventType and reason whose
// note contains says.
func awaitEvent(t *testing.T, hc *hyperv1.HostedCluster, eventType, reason, says string) {
	t.Helper()
	testutil.Eventually(t, converge, func() error {
		list := &eventsv1.EventList{}
		if err := env.Client.List(t.Context(), list, client.InNamespace(hc.Namespace)); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Regarding.Name == hc.Name && e.Type == eventType && e.Reason == reason && strings.Contains(e.Note, says) {
				return nil
			}
		}
		return fmt.Errorf("no %s event %s saying %q among %d", eventType, reason, says, len(list.Items))
	})
}

func awaitLeader(t *testing.T, c *cluster, holder string, transitions int32) {
	t.Helper()
	testutil.Eventually(t, converge, func() error {
		got := c.get(t).Status.ControlPlaneOperator
		if got == nil || got.HolderIdentity != holder || got.LeaseTransitions != transitions {
			return fmt.Errorf("status.controlPlaneOperator = %+v, want holder %s with %d transitions", got, holder, transitions)
		}
		return nil
	})
}

// passes counts the HostedCluster controller's reconciles in this process
// (controller-runtime's counter, shared by the tests' operators).
func passes(t *testing.T) float64 {
	t.Helper()
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == "hostedcluster" {
					n += m.GetCounter().GetValue()
				}
			}
		}
	}
	return n
}

// TestIdempotence checks that reconciles of a converged HostedCluster make no
// write request and read no Secret (the pull secret is read once per
// change, the HO's copies from its cache), from the API server's audit
// log, and that a change of status alone brings no pass.
func TestIdempotence(t *testing.T) {
	ho := startOperator(t, nil)
	c := newCluster(t, "4.17.0", nil)
	reportReady(t, c, "4.17.0")
	testutil.Eventually(t, converge, func() error {
		return checkCondition(c.get(t), hyperv1.Available, metav1.ConditionTrue)
	})
	time.Sleep(2 * time.Second) // converge: caches catch up with the last writes

	// A status written by someone else, five times, brings no pass (nor
	// do the HO's own status writes, by the same predicate).
	before := passes(t)
	for i := range 5 {
		hc := c.get(t)
		meta.SetStatusCondition(&hc.Status.Conditions, metav1.Condition{Type: "example.com/Touched", Status: metav1.ConditionTrue, Reason: "Touched", Message: fmt.Sprint(i)})
		if err := env.Client.Status().Update(t.Context(), hc); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)
	if n := passes(t) - before; n >= 5 {
		t.Fatalf("5 changes of status alone brought %v passes", n)
	}

	since := time.Now()
	before = passes(t)
	// Force reconciles without changing anything the HO reads: touch an
	// annotation it ignores, three times.
	for i := range 3 {
		c.touch(t, i)
		time.Sleep(time.Second)
	}
	time.Sleep(2 * time.Second)
	if writes := writesBy(t, ho, since, c.hc.Namespace, c.controlPlaneNamespace()); len(writes) != 0 {
		t.Fatalf("a converged HostedCluster got %d writes from the HO:%s", len(writes), describe(writes))
	}
	// The check can fail: the passes ran.
	if n := passes(t) - before; n < 3 {
		t.Fatalf("%v passes in the window, want one per touch (3): the check proves nothing", n)
	}
	events, err := env.AuditEvents()
	if err != nil {
		t.Fatal(err)
	}
	var reads []auditv1.Event
	for _, e := range events {
		if e.User.Username == ho && e.RequestReceivedTimestamp.After(since) && e.Verb == "get" && e.ObjectRef != nil && e.ObjectRef.Resource == "secrets" {
			reads = append(reads, e)
		}
	}
	if len(reads) > 0 {
		t.Fatalf("passes that changed nothing read %d Secrets:%s", len(reads), describe(reads))
	}
}

// TestBadReleaseImage checks what a payload that cannot be read does: a
// condition a user can act on, backoff instead of a hot loop, and nothing
// torn down.
func TestBadReleaseImage(t *testing.T) {
	var requests atomic.Int64
	counting := releasetest.WithMiddleware(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.Contains(r.URL.Path, "/manifests/") {
				requests.Add(1)
			}
			next.ServeHTTP(w, r)
		})
	})
	ho := startOperator(t, nil)
	c := newCluster(t, "4.17.0", nil)
	awaitControlPlane(t, c)
	runningImage := c.cpoImage("4.17.0")
	empty := releasetest.NewRegistry(t, counting)

	c.update(t, func(hc *hyperv1.HostedCluster) { hc.Spec.Release.Image = empty.Host() + "/ocp-release:does-not-exist" })
	testutil.Eventually(t, converge, func() error {
		cond := meta.FindStatusCondition(c.get(t).Status.Conditions, hyperv1.ValidReleaseImage)
		if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != "ReleaseImageNotFound" {
			return fmt.Errorf("ValidReleaseImage = %+v", cond)
		}
		if !strings.Contains(cond.Message, "does-not-exist") {
			return fmt.Errorf("the message does not name the image: %s", cond.Message)
		}
		return nil
	})

	since := time.Now()
	requests.Store(0)
	time.Sleep(10 * time.Second)
	if n := requests.Load(); n > 20 {
		t.Errorf("the HO asked the registry %d times in 10s: it retries in a hot loop instead of backing off", n)
	} else if n == 0 {
		t.Errorf("the HO never retried the lookup in 10s")
	}
	if writes := writesBy(t, ho, since, c.hc.Namespace, c.controlPlaneNamespace()); len(writes) > 2 {
		t.Errorf("the HO wrote %d times in 10s while the payload stayed unreadable:%s", len(writes), describe(writes))
	}
	d := &appsv1.Deployment{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: c.controlPlaneNamespace(), Name: "control-plane-operator"}, d); err != nil {
		t.Fatalf("the running CPO must not be torn down: %v", err)
	}
	if d.Spec.Template.Spec.Containers[0].Image != runningImage {
		t.Errorf("the CPO image changed to %s", d.Spec.Template.Spec.Containers[0].Image)
	}
}

// TestANewClusterThatCannotStartSaysWhy: a HostedCluster whose release
// image does not exist, or whose pull secret is missing, never ran: its
// Available and Progressing conditions (what `kubectl get hc` shows) are
// False with the cause, in one sentence that names the image once.
func TestANewClusterThatCannotStartSaysWhy(t *testing.T) {
	startOperator(t, nil)
	tests := []struct {
		name, reason, says string
		mutate             func(c *cluster) func(*hyperv1.HostedCluster)
	}{
		{name: "when the release image does not exist", reason: "ReleaseImageNotFound", says: "does-not-exist",
			mutate: func(c *cluster) func(*hyperv1.HostedCluster) {
				return func(hc *hyperv1.HostedCluster) {
					hc.Spec.Release.Image = c.registry.Host() + "/ocp-release:does-not-exist"
				}
			}},
		{name: "when the pull secret is missing", reason: "PullSecretUnavailable", says: "pull secret",
			mutate: func(*cluster) func(*hyperv1.HostedCluster) {
				return func(hc *hyperv1.HostedCluster) { hc.Spec.PullSecret.Name = "nowhere" }
			}},
		{name: "when the control-plane-operator log level is not one", reason: "InvalidConfiguration", says: "control-plane-operator-log-level",
			mutate: func(*cluster) func(*hyperv1.HostedCluster) {
				return func(hc *hyperv1.HostedCluster) {
					hc.Annotations = map[string]string{hyperv1.ControlPlaneOperatorLogLevelAnnotation: "verbose"}
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &cluster{registry: releasetest.NewRegistry(t)}
			c = newClusterIn(t, env.Namespace(t), "blocked", "4.17.0", tt.mutate(c))
			testutil.Eventually(t, converge, func() error {
				hc := c.get(t)
				for _, ct := range []string{hyperv1.Available, hyperv1.Progressing} {
					cond := meta.FindStatusCondition(hc.Status.Conditions, ct)
					if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != tt.reason || !strings.Contains(cond.Message, tt.says) {
						return fmt.Errorf("%s = %+v", ct, cond)
					}
					if n := strings.Count(strings.ToLower(cond.Message), "read release image"); n > 1 {
						return fmt.Errorf("%s's message repeats itself: %s", ct, cond.Message)
					}
				}
				return nil
			})
			// What `kubectl get hc` (and -o wide) prints: the API server's
			// table, from the CRD's printer columns.
			table := hostedClusterTable(t, c.hc.Namespace, c.hc.Name)
			columns := map[string]int32{}
			message := ""
			for i, col := range table.ColumnDefinitions {
				columns[col.Name] = col.Priority
				if col.Name == "Message" && len(table.Rows) == 1 {
					message, _ = table.Rows[0].Cells[i].(string)
				}
			}
			for name, priority := range map[string]int32{"Available": 0, "Progressing": 0, "Message": 0, "Reason": 1, "Endpoint": 1, "Release": 1} {
				if p, ok := columns[name]; !ok || p != priority {
					t.Errorf("column %s: priority %d present %t, want priority %d", name, p, ok, priority)
				}
			}
			if !strings.Contains(message, tt.says) {
				t.Errorf("the MESSAGE column is %q, want it to say %q", message, tt.says)
			}
			awaitEvent(t, c.hc, corev1.EventTypeWarning, tt.reason, tt.says)
		})
	}
}

// hostedClusterTable asks the API server for a HostedCluster as kubectl
// does, as a Table.
func hostedClusterTable(t *testing.T, namespace, name string) *metav1.Table {
	t.Helper()
	httpClient, err := rest.HTTPClientFor(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	url := strings.TrimSuffix(env.Config.Host, "/") + "/apis/hypershift.openshift.io/v1beta1/namespaces/" + namespace + "/hostedclusters/" + name
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	table := &metav1.Table{}
	if err := json.NewDecoder(resp.Body).Decode(table); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s as a Table: %s, %v", url, resp.Status, err)
	}
	return table
}

// TestFencedWritesAreRelayed: each report of fenced writes the
// control-plane-operator makes on its HostedControlPlane (WritesFenced)
// reaches the HostedCluster as one Warning event; a status write that
// repeats the report adds none.
func TestFencedWritesAreRelayed(t *testing.T) {
	startOperator(t, nil)
	c := newCluster(t, "4.17.0", nil)
	report := func(message string) {
		t.Helper()
		testutil.Eventually(t, converge, func() error {
			hcp := &hyperv1.HostedControlPlane{}
			if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: c.controlPlaneNamespace(), Name: c.hc.Name}, hcp); err != nil {
				return err
			}
			meta.SetStatusCondition(&hcp.Status.Conditions, metav1.Condition{Type: hyperv1.WritesFenced, Status: metav1.ConditionTrue, Reason: "WritesRefused", Message: message})
			meta.SetStatusCondition(&hcp.Status.Conditions, metav1.Condition{Type: "Poke", Status: metav1.ConditionTrue, Reason: "Poke", Message: time.Now().String()})
			return env.Client.Status().Update(t.Context(), hcp)
		})
	}
	count := func() int {
		list := &eventsv1.EventList{}
		if err := env.Client.List(t.Context(), list, client.InNamespace(c.hc.Namespace)); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range list.Items {
			if e.Regarding.Name == c.hc.Name && e.Reason == hyperv1.WritesFenced {
				n++
			}
		}
		return n
	}

	report("The API server refused 3 writes of this control-plane-operator as not the Lease holder; the last: fenced: control-plane-operator pod a")
	awaitEvent(t, c.hc, corev1.EventTypeWarning, hyperv1.WritesFenced, "The fence held: the control-plane-operator of HostedControlPlane "+
		c.controlPlaneNamespace()+"/"+c.hc.Name+" reports: The API server refused 3 writes")
	report("The API server refused 3 writes of this control-plane-operator as not the Lease holder; the last: fenced: control-plane-operator pod a")
	time.Sleep(2 * time.Second)
	if n := count(); n != 1 {
		t.Fatalf("one report gave %d WritesFenced events", n)
	}
	report("The API server refused 5 writes of this control-plane-operator as not the Lease holder; the last: fenced: control-plane-operator pod a")
	awaitEvent(t, c.hc, corev1.EventTypeWarning, hyperv1.WritesFenced, "refused 5 writes")
}
