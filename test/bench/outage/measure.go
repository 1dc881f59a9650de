package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/hypershift-le/hypershift/support/config"
	"github.com/hypershift-le/hypershift/support/leaderelection"
	"github.com/hypershift-le/hypershift/test/auditlog"
	"github.com/hypershift-le/hypershift/test/testenv"
)

// pair is the two candidates of one Lease, in a namespace of their own.
type pair struct {
	namespace string
	leading   [2]*atomic.Bool
	all       []*candidate
	// stepped is set once the Lease's leader stopped leading after the
	// outage began.
	stepped atomic.Bool
}

// watchTerms notes when the pair's leader stops leading.
func (p *pair) watchTerms(ctx context.Context) {
	was := p.leading[0].Load() || p.leading[1].Load()
	go func() {
		ticker := time.NewTicker(20 * time.Millisecond)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
				now := p.leading[0].Load() || p.leading[1].Load()
				if was && !now {
					p.stepped.Store(true)
					return
				}
				was = now
			}
		}
	}()
}

// uninterrupted reports whether the leader kept leading through the outage.
func (p *pair) uninterrupted() bool { return !p.stepped.Load() }

// renewalsSince returns, by namespace, the first successful Lease update by
// user after since, from the audit log.
func renewalsSince(env *testenv.Env, user string, since time.Time) (map[string]time.Time, error) {
	events, err := env.AuditEvents()
	if err != nil {
		return nil, err
	}
	out := map[string]time.Time{}
	for _, e := range events {
		t := e.RequestReceivedTimestamp.Time
		if e.User.Username != user || e.ObjectRef == nil || e.ObjectRef.Resource != "leases" || e.Verb != "update" ||
			!auditlog.Succeeded(e) || t.Before(since) {
			continue
		}
		if first, ok := out[e.ObjectRef.Namespace]; !ok || t.Before(first) {
			out[e.ObjectRef.Namespace] = t
		}
	}
	return out, nil
}

// mode is how a candidate meets the end of its holding during an outage.
type mode string

const (
	cutOff         mode = "ours (cut off, stays)"
	exitOnDeadline mode = "exit on deadline (restarted)"
)

// restartDelay is a kubelet's first back-off before it restarts an exited
// container.
const restartDelay = 10 * time.Second

// result is one run.
type result struct {
	mode              mode
	outage            time.Duration
	leases            int
	restarts          int
	holderChanges     int
	recoveries        []time.Duration
	requestsPerSecond float64
}

func (r result) recovery() (time.Duration, time.Duration) {
	if len(r.recoveries) == 0 {
		return 0, 0
	}
	sorted := slices.Clone(r.recoveries)
	slices.Sort(sorted)
	return sorted[len(sorted)/2], sorted[len(sorted)-1]
}

func (r result) row() string {
	p50, max := r.recovery()
	return fmt.Sprintf("| %s | %s | %d | %d | %d | %s | %s | %.1f |", r.mode, r.outage, r.leases, r.restarts, r.holderChanges,
		p50.Round(10*time.Millisecond), max.Round(10*time.Millisecond), r.requestsPerSecond)
}

// candidate is one process's worth: a manager with its election and a
// leader-only controller set up per term.
type candidate struct {
	name      string
	namespace string
	cfg       *rest.Config
	// terms records when each term's controllers were set up.
	mu    sync.Mutex
	terms []time.Time
}

func (c *candidate) termsSince(t time.Time) []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []time.Time
	for _, at := range c.terms {
		if at.After(t) {
			out = append(out, at)
		}
	}
	return out
}

// start runs the candidate as one process would, until ctx ends or it
// exits; leading reports term starts and ends.
func (c *candidate) start(ctx context.Context, leading *atomic.Bool) error {
	ctx = ctrl.LoggerInto(ctx, ctrl.Log)
	mgr, _, err := leaderelection.NewManager(ctx, c.cfg, ctrl.Options{
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{c.namespace: {}}},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	}, leaderelection.Election{Enabled: true, Namespace: c.namespace, Name: "lease", Identity: c.name, Timings: config.DefaultControlPlaneOperatorTimings}, ctrl.Log)
	if err != nil {
		return err
	}
	err = mgr.AddPerTerm(func(m manager.Manager) error {
		c.mu.Lock()
		c.terms = append(c.terms, time.Now())
		c.mu.Unlock()
		return ctrl.NewControllerManagedBy(m).Named("work").For(&corev1.ConfigMap{}).
			Complete(reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) { return reconcile.Result{}, nil }))
	})
	if err != nil {
		return err
	}
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		leading.Store(true)
		<-ctx.Done()
		leading.Store(false)
		return nil
	})); err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// measure runs leases pairs through one outage.
func measure(ctx context.Context, env *testenv.Env, m mode, leases int, outage time.Duration) (result, error) {
	res := result{mode: m, outage: outage, leases: leases}
	user := fmt.Sprintf("outage-%d", time.Now().UnixNano())
	cfg, err := env.AddUser(user, "system:masters")
	if err != nil {
		return res, err
	}
	proxy, err := testenv.StartProxy(cfg.Host)
	if err != nil {
		return res, err
	}
	defer proxy.Close()
	cfg.Host = "https://" + proxy.Addr
	cfg.QPS, cfg.Burst = -1, 0

	runCtx, stopAll := context.WithCancel(ctx)
	defer stopAll()
	var wg sync.WaitGroup
	var restarts atomic.Int32
	pairs := make([]*pair, leases)
	for i := range leases {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "outage-"}}
		if err := env.Client.Create(ctx, ns); err != nil {
			return res, err
		}
		p := &pair{namespace: ns.Name, leading: [2]*atomic.Bool{{}, {}}}
		for j := range 2 {
			c := &candidate{name: fmt.Sprintf("%s-%d", ns.Name, j), namespace: ns.Name, cfg: rest.CopyConfig(cfg)}
			p.all = append(p.all, c)
			flag := p.leading[j]
			wg.Go(func() { supervise(runCtx, m, c, flag, &restarts) })
			if j == 0 {
				time.Sleep(20 * time.Millisecond) // the first candidate is the leader
			}
		}
		pairs[i] = p
	}
	// Wait until every Lease has a leader, and let the starts settle.
	deadline := time.Now().Add(3 * time.Minute)
	for {
		led := 0
		for _, p := range pairs {
			if p.leading[0].Load() || p.leading[1].Load() {
				led++
			}
		}
		if led == leases {
			break
		}
		if time.Now().After(deadline) {
			return res, fmt.Errorf("only %d of %d Leases have a leader after 3 minutes", led, leases)
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(5 * time.Second)
	before, err := transitions(ctx, env, pairs)
	if err != nil {
		return res, err
	}

	restarts.Store(0)
	for _, p := range pairs {
		p.watchTerms(runCtx)
	}
	stalled := time.Now()
	proxy.Stall()
	time.Sleep(outage)
	proxy.Resume()
	resumed := time.Now()

	// Every Lease's leader works again: a term set up after the recovery,
	// or, for a leader whose term never stopped (an outage shorter than
	// its renew deadline), its first successful renewal after it.
	deadline = time.Now().Add(3 * time.Minute)
	var missing []string
	for time.Now().Before(deadline) {
		renewed, err := renewalsSince(env, user, resumed)
		if err != nil {
			return res, err
		}
		missing = missing[:0]
		res.recoveries = res.recoveries[:0]
		for _, p := range pairs {
			first := time.Time{}
			for _, c := range p.all {
				for _, at := range c.termsSince(stalled) {
					if first.IsZero() || at.Before(first) {
						first = at
					}
				}
			}
			if first.IsZero() && p.uninterrupted() {
				first = renewed[p.namespace]
			}
			if first.IsZero() {
				missing = append(missing, p.namespace)
				continue
			}
			res.recoveries = append(res.recoveries, max(first.Sub(resumed), 0))
		}
		if len(missing) == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(missing) > 0 {
		return res, fmt.Errorf("%d Leases had no leader working 3 minutes after the recovery (e.g. %s)", len(missing), missing[0])
	}
	time.Sleep(time.Until(resumed.Add(30 * time.Second)))
	res.restarts = int(restarts.Load())
	after, err := transitions(ctx, env, pairs)
	if err != nil {
		return res, err
	}
	for ns, n := range after {
		res.holderChanges += int(n - before[ns])
	}
	events, err := env.AuditEvents()
	if err != nil {
		return res, err
	}
	requests := 0
	for _, e := range events {
		t := e.RequestReceivedTimestamp.Time
		if e.User.Username == user && !t.Before(resumed) && t.Before(resumed.Add(30*time.Second)) {
			requests++
		}
	}
	res.requestsPerSecond = float64(requests) / 30
	stopAll()
	wg.Wait()
	return res, nil
}

// supervise runs c as a kubelet runs a container: started again, after a
// back-off, whenever it exits. In the exit-on-deadline mode the process
// exits the moment it stops leading on its own, as the previous elector did.
func supervise(ctx context.Context, m mode, c *candidate, leading *atomic.Bool, restarts *atomic.Int32) {
	for {
		procCtx, exit := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = c.start(procCtx, leading)
		}()
		if m == exitOnDeadline {
			exitOnStepDown(procCtx, done, leading, exit)
		}
		<-done
		exit()
		if ctx.Err() != nil {
			return
		}
		restarts.Add(1)
		select {
		case <-ctx.Done():
			return
		case <-time.After(restartDelay):
		}
	}
}

// exitOnStepDown ends the process when it stops leading while not asked to.
func exitOnStepDown(ctx context.Context, done <-chan struct{}, leading *atomic.Bool, exit context.CancelFunc) {
	ticker := time.NewTicker(20 * time.Millisecond)
	defer ticker.Stop()
	was := false
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case <-ticker.C:
			now := leading.Load()
			if was && !now {
				exit()
				return
			}
			was = now
		}
	}
}

// transitions reads every Lease's leaseTransitions, by namespace.
func transitions(ctx context.Context, env *testenv.Env, pairs []*pair) (map[string]int32, error) {
	out := map[string]int32{}
	for _, p := range pairs {
		lease := &coordinationv1.Lease{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: p.namespace, Name: "lease"}, lease); err != nil {
			return nil, fmt.Errorf("failed to read the Lease of %s: %w", p.namespace, err)
		}
		out[p.namespace] = ptr.Deref(lease.Spec.LeaseTransitions, 0)
	}
	return out, nil
}
