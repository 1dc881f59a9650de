// Package electorload runs many of the project's electors
// (support/leaderelection) against one API server and measures the Lease
// traffic they make, from the API server's audit log, against what
// client-go's polling elector would make at three anchor timings.
//
// Run starts n electors (rounded up to groups of three candidates per
// Lease: one leader, two standbys), each group with a client of its own,
// waits until every Lease has a holder, then counts the Lease writes,
// reads and watch requests over a steady window. It is a part of the scale
// benchmark (test/bench/scale); the environment must have its audit log on.
package electorload

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/rest"

	"github.com/hypershift-le/hypershift/support/config"
	"github.com/hypershift-le/hypershift/support/leaderelection"
	"github.com/hypershift-le/hypershift/test/auditlog"
	"github.com/hypershift-le/hypershift/test/bench/report"
	"github.com/hypershift-le/hypershift/test/testenv"
)

// Candidates per Lease.
const perLease = 3

// user is the API user every elector of the run authenticates as.
const user = "electorload"

// anchor is client-go's LeaderElector at one set of timings: its leader
// writes the Lease every retry period and each follower reads it every
// retry period (plus a jitter of up to 1.2 retry periods, left out here).
type anchor struct {
	name        string
	retryPeriod time.Duration
}

var anchors = []anchor{
	{"client-go 15/10/2", 2 * time.Second},
	{"HyperShift 60/40/15", 15 * time.Second},
	{"library-go 137/107/26", 26 * time.Second},
}

// group is the candidates of one Lease.
type group struct {
	leaders atomic.Int32 // "started leading" callbacks
	held    atomic.Bool
}

// Run starts n electors of ours (config.DefaultControlPlaneOperatorTimings)
// for n/3 Leases (rounded up) in a new namespace, waits until every Lease
// has a holder, counts the Lease requests over window from the audit log,
// stops them (they release their Leases) and returns the results as
// markdown. It returns an error, with the markdown when there is any, when
// the electors misbehave: a Lease without a holder, a candidate that lost
// its Lease, a second election of a Lease, or a standby's Lease read in
// the window.
func Run(ctx context.Context, env *testenv.Env, n int, window time.Duration) (string, error) {
	if env.AuditLogPath == "" {
		return "", errors.New("electorload needs the audit log: start the environment with testenv.Options{AuditLog: true}")
	}
	if n < perLease || window <= 0 {
		return "", fmt.Errorf("need at least %d electors and a positive window", perLease)
	}
	timings := config.DefaultControlPlaneOperatorTimings
	leases := (n + perLease - 1) / perLease
	electors := leases * perLease

	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "electorload-"}}
	if err := env.Client.Create(ctx, nsObj); err != nil {
		return "", fmt.Errorf("failed to create the namespace: %w", err)
	}
	ns := nsObj.Name
	rc, err := env.AddUser(user, "system:masters")
	if err != nil {
		return "", err
	}
	// No client-side rate limit shapes the result.
	rc.QPS, rc.Burst = 1e6, 1e6

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	groups := make([]*group, leases)
	var wg sync.WaitGroup
	var lostMu sync.Mutex
	var lost []string
	started := time.Now()
	for i := range leases {
		g := &group{}
		groups[i] = g
		cfg := rest.CopyConfig(rc)
		// A proxy function (that proxies nothing) keeps client-go from
		// sharing one cached transport: every group has its own
		// connection, as separate processes would.
		cfg.Proxy = func(*http.Request) (*url.URL, error) { return nil, nil }
		client, err := leaderelection.NewClient(cfg)
		if err != nil {
			stop()
			wg.Wait()
			return "", err
		}
		for c := 1; c <= perLease; c++ {
			e, err := leaderelection.New(leaderelection.Config{
				Client: client, Namespace: ns, Name: fmt.Sprintf("lease-%04d", i),
				Identity: fmt.Sprintf("lease-%04d-c%d", i, c), Timings: timings, Log: logr.Discard(),
			})
			if err != nil {
				stop()
				wg.Wait()
				return "", err
			}
			wg.Go(func() {
				err := e.Run(runCtx, func(leadCtx context.Context) error {
					g.leaders.Add(1)
					g.held.Store(true)
					<-leadCtx.Done()
					return nil
				})
				if err != nil {
					lostMu.Lock()
					lost = append(lost, fmt.Sprintf("%s: %v", e.Identity(), err))
					lostMu.Unlock()
				}
			})
		}
	}
	stopAll := func() {
		stop()
		wg.Wait()
	}

	// Wait until every Lease has a holder.
	limit := time.After(timings.LeaseDuration + 2*time.Minute)
	var allHeld time.Duration
	for allHeld == 0 {
		held := 0
		for _, g := range groups {
			if g.held.Load() {
				held++
			}
		}
		if held == leases {
			allHeld = time.Since(started)
			break
		}
		select {
		case <-ctx.Done():
			stopAll()
			return "", ctx.Err()
		case <-limit:
			stopAll()
			return "", fmt.Errorf("only %d of %d Leases had a holder %s after the start", held, leases, time.Since(started).Round(time.Second))
		case <-time.After(50 * time.Millisecond):
		}
	}

	// Let the start's requests (creates, reads after a lost create) end,
	// then count a steady window.
	from := time.Now().Add(5 * time.Second)
	to := from.Add(window)
	select {
	case <-ctx.Done():
		stopAll()
		return "", ctx.Err()
	case <-time.After(time.Until(to)):
	}
	rss, hwm := procStatus("VmRSS"), procStatus("VmHWM")
	goroutines := runtime.NumGoroutine()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	elections := 0
	for _, g := range groups {
		elections += int(g.leaders.Load())
	}
	lostMu.Lock()
	lostInWindow := len(lost)
	lostMu.Unlock()
	stopAll()
	lostMu.Lock()
	// Errors on the way out (after the cancel) are reported too.
	lostTotal := len(lost)
	lostSample := lost
	lostMu.Unlock()

	time.Sleep(time.Second)
	events, err := env.AuditEvents()
	if err != nil {
		return "", err
	}
	t := count(events, ns, from, to)

	secs := window.Seconds()
	leaders, followers := float64(leases), float64(leases*(perLease-1))
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("%d of our electors (`support/leaderelection`, `config.DefaultControlPlaneOperatorTimings`: lease duration %s, renew deadline %s, retry %s, renew every %s) ",
		electors, timings.LeaseDuration, timings.RenewDeadline, timings.RetryPeriod, timings.Renew())
	w("campaign in one process for %d Leases, %d candidates each: %d leaders and %d standbys. ", leases, perLease, leases, leases*(perLease-1))
	w("Each Lease's candidates share a client of their own (own connection, no client-side rate limit), as one API user. ")
	w("Lease requests are counted from the API server's audit log over a %s window that starts 5s after every Lease had a holder; ", window)
	w("the anchors are client-go's LeaderElector at three timings, by formula for the same leaders and standbys: leader writes/s = leaders / RP, standby reads/s = standbys / RP (client-go's standbys add a jitter of up to 1.2 RP to each wait, so they read about 1/1.6 of that).\n\n")
	w("| measure | result |\n|---|---|\n")
	w("| electors (Leases × candidates) | %d (%d × %d) |\n", electors, leases, perLease)
	w("| **every Lease had a holder** | **%.2f s** after the first elector started |\n", allHeld.Seconds())
	w("| elections (\"started leading\") until the window ended | %d (one per Lease: %d) |\n", elections, leases)
	w("| **Lease writes/s** in the window | **%.2f** (%d: update %d, create %d; refused %d) |\n", float64(t.writes)/secs, t.writes, t.updates, t.creates, t.refusedWrites)
	w("| **Lease reads/s** in the window (get, list) | **%.2f** (%d) |\n", float64(t.reads)/secs, t.reads)
	w("| watch requests in the window | %d |\n", t.watchesInWindow)
	w("| watches established before the window and open through it | %d (of %d electors) |\n", t.watchesOpen, electors)
	w("| watch requests since the start | %d |\n", t.watchesTotal)
	w("| **process RSS** at the end of the window | **%s** (peak %s; Go heap in use %.0f MiB, %d goroutines) |\n", rss, hwm, float64(ms.HeapInuse)/(1<<20), goroutines)
	w("| electors that returned an error | %d while running, %d in all |\n", lostInWindow, lostTotal)
	w("\n| elector | Lease writes/s | Lease reads/s | writes + reads /s |\n|---|---|---|---|\n")
	w("| **ours, measured** | **%.2f** | **%.2f** | **%.2f** |\n", float64(t.writes)/secs, float64(t.reads)/secs, float64(t.writes+t.reads)/secs)
	ri := timings.Renew().Seconds()
	w("| ours, formula (leaders / renew interval, 0 reads) | %.2f | 0 | %.2f |\n", leaders/ri, leaders/ri)
	for _, a := range anchors {
		rp := a.retryPeriod.Seconds()
		w("| %s, formula (RP %gs) | %.2f | %.2f | %.2f |\n", a.name, rp, leaders/rp, followers/rp, (leaders+followers)/rp)
	}
	w("\nOurs measured / anchor formula, writes + reads: ")
	for i, a := range anchors {
		if i > 0 {
			w(", ")
		}
		w("%s %.3f", a.name, float64(t.writes+t.reads)/secs/((leaders+followers)/a.retryPeriod.Seconds()))
	}
	w(".\n")

	var problems []string
	if elections != leases {
		problems = append(problems, fmt.Sprintf("%d elections for %d Leases: some Lease changed holder", elections, leases))
	}
	if lostInWindow > 0 {
		problems = append(problems, fmt.Sprintf("%d electors returned an error while running, e.g. %s", lostInWindow, lostSample[0]))
	} else if lostTotal > 0 {
		problems = append(problems, fmt.Sprintf("%d electors returned an error when stopped, e.g. %s", lostTotal, lostSample[0]))
	}
	if t.reads > 0 {
		problems = append(problems, fmt.Sprintf("%d Lease reads in the steady window (want 0)", t.reads))
	}
	if len(problems) > 0 {
		w("\nProblems:\n\n")
		for _, p := range problems {
			w("- %s\n", p)
		}
		return b.String(), errors.New(strings.Join(problems, "; "))
	}
	return b.String(), nil
}

type tally struct {
	writes, updates, creates, refusedWrites int
	reads                                   int
	watchesInWindow, watchesOpen            int
	watchesTotal                            int
}

// count tallies the run's Lease requests in ns: writes and reads received
// in [from, to), and watches.
func count(events []auditv1.Event, ns string, from, to time.Time) tally {
	var t tally
	type watch struct {
		at, end time.Time
	}
	watches := map[types.UID]*watch{}
	seen := map[types.UID]bool{}
	in := func(at time.Time) bool { return !at.Before(from) && at.Before(to) }
	for _, e := range events {
		if e.ObjectRef == nil || e.ObjectRef.Resource != "leases" || e.ObjectRef.Namespace != ns || e.User.Username != user {
			continue
		}
		at := e.RequestReceivedTimestamp.Time
		if e.Verb == "watch" {
			wt, ok := watches[e.AuditID]
			if !ok {
				wt = &watch{at: at}
				watches[e.AuditID] = wt
			}
			if e.Stage == auditv1.StageResponseComplete {
				wt.end = e.StageTimestamp.Time
			}
			continue
		}
		if seen[e.AuditID] {
			continue
		}
		seen[e.AuditID] = true
		if !in(at) {
			continue
		}
		switch e.Verb {
		case "create", "update", "patch":
			if auditlog.Succeeded(e) {
				t.writes++
				if e.Verb == "create" {
					t.creates++
				} else {
					t.updates++
				}
			} else {
				t.refusedWrites++
			}
		case "get", "list":
			t.reads++
		}
	}
	for _, wt := range watches {
		t.watchesTotal++
		if in(wt.at) {
			t.watchesInWindow++
		}
		if wt.at.Before(from) && (wt.end.IsZero() || !wt.end.Before(to)) {
			t.watchesOpen++
		}
	}
	return t
}

// procStatus returns a field of /proc/self/status, e.g. VmRSS.
func procStatus(key string) string {
	if v := report.ProcField("/proc/self/status", key); v != "" {
		return v
	}
	return "n/a"
}
