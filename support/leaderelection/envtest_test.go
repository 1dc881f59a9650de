package leaderelection_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/rest"

	"github.com/hypershift-le/hypershift/support/config"
	"github.com/hypershift-le/hypershift/support/leaderelection"
	"github.com/hypershift-le/hypershift/test/auditlog"
	"github.com/hypershift-le/hypershift/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, testenv.Options{AuditLog: true}, &env)) }

// short timings keep the test fast: LD 4s, RD 3s, RP 1s, renew every 2s.
var short = config.Timings{LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: time.Second}

type runner struct {
	elector *leaderelection.Elector
	led     chan time.Time
	// stepped receives when a term's leader-only work was told to stop.
	stepped chan time.Time
	done    chan error
	cancel  context.CancelFunc
}

func run(t *testing.T, cfg *rest.Config, namespace, identity string) *runner {
	t.Helper()
	client, err := leaderelection.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e, err := leaderelection.New(leaderelection.Config{Client: client, Namespace: namespace, Name: "lease", Identity: identity, Timings: short, Log: testr.New(t).WithName(identity)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &runner{elector: e, led: make(chan time.Time, 10), stepped: make(chan time.Time, 10), done: make(chan error, 1), cancel: cancel}
	go func() {
		r.done <- e.Run(ctx, func(ctx context.Context) error {
			r.led <- time.Now()
			<-ctx.Done()
			r.stepped <- time.Now()
			return nil
		})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-r.done:
			if err != nil && !errors.Is(err, leaderelection.ErrLost) {
				t.Errorf("%s returned %v", identity, err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("%s did not stop", identity)
		}
	})
	return r
}

func namespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "election-"}}
	if err := env.Client.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

func user(t *testing.T, name string) *rest.Config {
	t.Helper()
	cfg, err := env.AddUser(name, "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestStalledConnection hangs every request of the leader (its watch too)
// at a proxy, lets the standby take over, then delivers the held requests:
// the audit log shows no successful write by the old leader after the new
// one's first write.
func TestStalledConnection(t *testing.T) {
	ns := namespace(t)
	aUser, bUser := "elector-a-"+ns, "elector-b-"+ns
	aCfg := user(t, aUser)
	p, err := testenv.StartProxy(aCfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	aCfg.Host = "https://" + p.Addr

	a := run(t, aCfg, ns, "a")
	select {
	case <-a.led:
	case <-time.After(10 * time.Second):
		t.Fatal("a did not lead")
	}
	b := run(t, user(t, bUser), ns, "b")
	time.Sleep(short.LeaseDuration / 2) // b watches; a renews at least once

	stalled := time.Now()
	p.Stall()
	var lost time.Time
	select {
	case lost = <-a.stepped:
	case <-time.After(short.RenewDeadline + 3*time.Second):
		t.Fatal("a kept leading on a stalled connection past its renew deadline")
	}
	var took time.Time
	select {
	case took = <-b.led:
	case <-time.After(short.LeaseDuration + 3*time.Second):
		t.Fatal("b did not take over")
	}
	t.Logf("a stepped down %s after the stall, b led %s after the stall", lost.Sub(stalled).Round(time.Millisecond), took.Sub(stalled).Round(time.Millisecond))
	if !lost.Before(took) {
		t.Errorf("b led at %s, before a stepped down at %s", took, lost)
	}
	p.Resume() // a's held requests reach the server now
	// a, cut off, renews on its last write when it gets through: that
	// conflicts with b's, and a has lost.
	select {
	case err := <-a.done:
		if !errors.Is(err, leaderelection.ErrLost) || !strings.Contains(err.Error(), `held by "b"`) {
			t.Fatalf("a returned %v, want a loss to b", err)
		}
		a.done <- err
	case <-time.After(10 * time.Second):
		t.Fatal("a did not learn that b holds the Lease")
	}
	time.Sleep(2 * time.Second)

	events, err := env.AuditEvents()
	if err != nil {
		t.Fatal(err)
	}
	var bFirst *auditv1.Event
	for i, e := range events {
		if e.User.Username == bUser && isLeaseWrite(e, ns) && auditlog.Succeeded(e) {
			bFirst = &events[i]
			break
		}
	}
	if bFirst == nil {
		t.Fatal("the audit log has no successful Lease write by b")
	}
	late, aWrites := 0, 0
	for _, e := range events {
		if e.User.Username != aUser || e.ObjectRef == nil || e.ObjectRef.Namespace != ns {
			continue
		}
		if e.RequestReceivedTimestamp.After(bFirst.StageTimestamp.Time) {
			late++
		}
		if isLeaseWrite(e, ns) && auditlog.Succeeded(e) {
			aWrites++
			if !e.StageTimestamp.Before(&bFirst.StageTimestamp) {
				t.Errorf("a's %s of the Lease succeeded at %s, after b's first write at %s", e.Verb, e.StageTimestamp.Format(time.StampMicro), bFirst.StageTimestamp.Format(time.StampMicro))
			}
		}
	}
	if aWrites == 0 {
		t.Fatal("a never wrote: the check proves nothing")
	}
	t.Logf("a: %d successful Lease writes, all before b's first; %d of its requests reached the server after b's first write", aWrites, late)
}

// TestHandoverThroughTheWatch stops the leader gracefully: the standby
// leads within a second, and while the Lease was held it read nothing.
func TestHandoverThroughTheWatch(t *testing.T) {
	ns := namespace(t)
	aUser, bUser := "elector-a-"+ns, "elector-b-"+ns
	a := run(t, user(t, aUser), ns, "a")
	<-a.led
	b := run(t, user(t, bUser), ns, "b")
	time.Sleep(2 * short.LeaseDuration)
	stopped := time.Now()
	a.cancel()
	select {
	case took := <-b.led:
		if d := took.Sub(stopped); d > time.Second {
			t.Errorf("the handover took %s, want at most 1s", d)
		} else {
			t.Logf("the handover took %s", d.Round(time.Millisecond))
		}
	case <-time.After(short.LeaseDuration + 3*time.Second):
		t.Fatal("b did not take over")
	}
	events, err := env.AuditEvents()
	if err != nil {
		t.Fatal(err)
	}
	reads, writes := 0, 0
	for _, e := range events {
		if e.User.Username != bUser || e.ObjectRef == nil || e.ObjectRef.Namespace != ns || e.ObjectRef.Resource != "leases" {
			continue
		}
		switch {
		case e.Verb == "get" || (e.Verb == "list" && e.RequestReceivedTimestamp.After(stopped)):
			reads++
		case auditlog.IsWrite(e):
			writes++
		}
	}
	if reads != 0 {
		t.Errorf("the standby read the Lease %d times beyond its one list, want 0: it watches", reads)
	}
	if writes == 0 {
		t.Error("the standby never wrote the Lease after the handover")
	}
}

func isLeaseWrite(e auditv1.Event, ns string) bool {
	return auditlog.IsWrite(e) && e.ObjectRef != nil && e.ObjectRef.Resource == "leases" && e.ObjectRef.Namespace == ns
}

// TestStandbyWithRefusedCredentialsIsNotReady runs a candidate whose user
// may not touch Leases, beside a leader: it reports not ready at once, where
// before it looked like a healthy standby.
func TestStandbyWithRefusedCredentialsIsNotReady(t *testing.T) {
	ns := namespace(t)
	leader := run(t, user(t, "ready-leader"), ns, "leader")
	<-leader.led
	cfg, err := env.AddUser("no-lease-rights")
	if err != nil {
		t.Fatal(err)
	}
	standby := run(t, cfg, ns, "standby")
	deadline := time.Now().Add(10 * time.Second)
	for standby.elector.Ready(nil) == nil {
		if time.Now().After(deadline) {
			t.Fatal("a candidate refused by RBAC stayed ready")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := standby.elector.Ready(nil); !strings.Contains(err.Error(), "forbidden") {
		t.Fatalf("Ready() = %v, want the refusal", err)
	}
	if err := leader.elector.Ready(nil); err != nil {
		t.Fatalf("the leader is not ready: %v", err)
	}
}
