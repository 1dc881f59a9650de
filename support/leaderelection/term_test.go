package leaderelection_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/leaderelection"
	"github.com/hypershift-le/hypershift/test/testenv"
)

// stamper stamps every ConfigMap of its namespace with the term it runs in.
type stamper struct {
	client client.Client
	term   *atomic.Int32
}

func (s stamper) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	cm := &corev1.ConfigMap{}
	if err := s.client.Get(ctx, req.NamespacedName, cm); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	want := fmt.Sprint(s.term.Load())
	if cm.Annotations["term"] == want {
		return reconcile.Result{}, nil
	}
	patch := client.MergeFrom(cm.DeepCopy())
	cm.Annotations = map[string]string{"term": want}
	return reconcile.Result{}, s.client.Patch(ctx, cm, patch)
}

// TestLeaderOnlyControllersRunAgainInANewTerm cuts the leader off from the
// API server past its renew deadline (a stalling proxy between the whole
// process and the API server), then lets it through: it leads again in the
// same process with new controllers on the same cache; the second term
// reconciles and writes, and the terms leave no goroutines or metrics
// behind.
func TestLeaderOnlyControllersRunAgainInANewTerm(t *testing.T) {
	ns := namespace(t)
	cfg := user(t, "terms-"+ns)
	proxy, err := testenv.StartProxy(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	cfg.Host = "https://" + proxy.Addr
	t.Setenv(hyperv1.PodNameEnv, "terms-a")

	mgr, elector, err := leaderelection.NewManager(t.Context(), cfg, ctrl.Options{
		Scheme:                 env.Scheme,
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	}, leaderelection.Election{Enabled: true, Namespace: ns, Name: "lease", Timings: short}, ctrl.Log)
	if err != nil {
		t.Fatal(err)
	}
	var term, setups atomic.Int32
	err = mgr.AddPerTerm(func(m manager.Manager) error {
		setups.Add(1)
		return ctrl.NewControllerManagedBy(m).Named("stamper").For(&corev1.ConfigMap{}).
			Complete(stamper{client: mgr.GetClient(), term: &term})
	})
	if err != nil {
		t.Fatal(err)
	}
	// A controller added directly could not start in a second term.
	direct := stamper{client: mgr.GetClient(), term: &term}
	if _, err := controller.New("direct", mgr, controller.Options{Reconciler: direct}); err == nil || !strings.Contains(err.Error(), "AddPerTerm") {
		t.Fatalf("adding a controller directly: %v, want it refused", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("the manager stopped with %v", err)
		}
	})

	stamped := func(name, want string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			cm := &corev1.ConfigMap{}
			err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, cm)
			if err == nil && cm.Annotations["term"] == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("configmap %s not stamped %q after 20s (%v, %v)", name, want, err, cm.Annotations)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	create := func(name string) {
		t.Helper()
		if err := env.Client.Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}); err != nil {
			t.Fatal(err)
		}
	}

	term.Store(1)
	create("first")
	stamped("first", "1")
	var goroutines int
	var families string
	for cut := 2; cut <= 5; cut++ {
		proxy.Stall()
		waitFor(t, 2*short.RenewDeadline, func() bool { return !elector.Status().Leading })
		term.Store(int32(cut))
		proxy.Resume()
		waitFor(t, 3*short.RetryPeriod+2*time.Second, func() bool { return elector.Status().Leading })
		name := fmt.Sprintf("term-%d", cut)
		create(name)
		stamped(name, fmt.Sprint(cut))
		time.Sleep(500 * time.Millisecond)
		if cut == 2 {
			// The first cut opens new connections; count from the second term.
			goroutines, families = runtime.NumGoroutine(), countMetrics(t)
		}
	}
	if n := setups.Load(); n != 5 {
		t.Fatalf("the controllers were set up %d times, want once per term (5)", n)
	}
	if after := runtime.NumGoroutine(); after > goroutines+2 {
		t.Fatalf("%d goroutines after three more terms, %d after the second: a term leaks", after, goroutines)
	}
	if after := countMetrics(t); after != families {
		t.Fatalf("%s after three more terms, %s after the first", after, families)
	}
	if h := elector.Status().Holder; h != "terms-a" {
		t.Fatalf("holder %q, want terms-a throughout", h)
	}
}

// countMetrics counts the registered metric families, and the series of
// the stamper controller: registrations, and per-controller series, must
// not grow with terms (other series may gain label values, such as new
// response codes during an outage).
func countMetrics(t *testing.T) string {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	series := 0
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetValue() == "stamper" {
					series++
				}
			}
		}
	}
	return fmt.Sprintf("%d families, %d series of the stamper controller", len(families), series)
}

func waitFor(t *testing.T, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not true within %s", within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestElectedOnlyOnTheLeader: the manager's Elected() channel closes on the
// replica that leads, and not on a standby while another holds the Lease;
// the standby's closes once it takes over.
func TestElectedOnlyOnTheLeader(t *testing.T) {
	ns := namespace(t)
	start := func(identity string) (*leaderelection.Manager, context.CancelFunc) {
		t.Helper()
		mgr, _, err := leaderelection.NewManager(t.Context(), user(t, identity+"-"+ns), ctrl.Options{
			Scheme:                 env.Scheme,
			Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
			Metrics:                metricsserver.Options{BindAddress: "0"},
			HealthProbeBindAddress: "0",
		}, leaderelection.Election{Enabled: true, Namespace: ns, Name: "lease", Timings: short, Identity: identity}, ctrl.Log)
		if err != nil {
			t.Fatal(err)
		}
		// Leader-only work that lasts the term (a term without any ends,
		// and releases the Lease, at once).
		if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error { <-ctx.Done(); return nil })); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- mgr.Start(ctx) }()
		stop := sync.OnceFunc(func() {
			cancel()
			if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("%s stopped with %v", identity, err)
			}
		})
		t.Cleanup(stop)
		return mgr, stop
	}
	closed := func(ch <-chan struct{}, within time.Duration) bool {
		select {
		case <-ch:
			return true
		case <-time.After(within):
			return false
		}
	}

	a, stopA := start("elected-a")
	if !closed(a.Elected(), 10*time.Second) {
		t.Fatal("the only candidate's Elected() did not close within 10s")
	}
	b, _ := start("elected-b")
	if closed(b.Elected(), 2*short.LeaseDuration) {
		t.Fatal("the standby's Elected() closed while the other replica holds the Lease")
	}
	stopA()
	if !closed(b.Elected(), 10*time.Second) {
		t.Fatal("the standby's Elected() did not close within 10s of taking over")
	}
}
