package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clientgoelection "k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/hypershift-le/hypershift/support/config"
	"github.com/hypershift-le/hypershift/support/leaderelection"
)

// leaseName is the Lease every group of candidates campaigns for, one per
// namespace, but where the parent arbitrates (see group.leaseOf).
const leaseName = "lease"

// configuration is one elector with its timings.
type configuration struct {
	// key prefixes the configuration's namespaces and users.
	key string
	// name is what tables and the chart call it.
	name string
	// anchor means client-go's LeaderElector; otherwise ours.
	anchor bool
	// timings; RenewInterval is used by ours only.
	timings config.Timings
	// sameLeaseAs, for ours, names the anchor with the same lease duration
	// it is compared with on its own.
	sameLeaseAs string
	// longLeaseOf, for ours with a longer lease, names the configuration
	// of ours whose takeovers it must not make slower.
	longLeaseOf string
}

// renewPeriod is how often the leader writes: client-go renews every retry
// period, ours every renew interval.
func (c configuration) renewPeriod() time.Duration {
	if c.anchor {
		return c.timings.RetryPeriod
	}
	return c.timings.Renew()
}

func (c configuration) timingsText() string {
	t := c.timings
	s := fmt.Sprintf("LD %s, RD %s, RP %s", seconds(t.LeaseDuration), seconds(t.RenewDeadline), seconds(t.RetryPeriod))
	if !c.anchor {
		s += ", renew " + seconds(t.Renew())
	}
	return s
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3gs", d.Seconds()) }

var configurations = []configuration{
	{key: "cg15", name: "client-go 15/10/2", anchor: true, timings: config.Timings{LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}},
	{key: "hs60", name: "HyperShift 60/40/15", anchor: true, timings: config.Timings{LeaseDuration: 60 * time.Second, RenewDeadline: 40 * time.Second, RetryPeriod: 15 * time.Second}},
	{key: "lg137", name: "library-go 137/107/26", anchor: true, timings: config.Timings{LeaseDuration: 137 * time.Second, RenewDeadline: 107 * time.Second, RetryPeriod: 26 * time.Second}},
	// Ours at client-go's lease duration: what ours costs and how fast it
	// takes over when a product chooses 15s.
	{key: "ours15", name: "ours 15/10/2 renew 6.7s", timings: config.Timings{LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}, sameLeaseAs: "cg15"},
	// Ours with a 300s lease, renewing every 150s: whether the parent
	// makes a lease five times longer (and five times fewer writes) cost
	// no takeover time.
	{key: "ours300", name: "ours 300/225/2 renew 150s", timings: config.Timings{LeaseDuration: 300 * time.Second, RenewDeadline: 225 * time.Second, RetryPeriod: 2 * time.Second}, longLeaseOf: "ours"},
	// Ours with the defaults comes last: the goals are judged on it.
	{key: "ours", name: "ours 60/45/2 renew 30s", timings: config.DefaultControlPlaneOperatorTimings},
}

// leadEvent is a candidate's "started leading" callback.
type leadEvent struct {
	c  *candidate
	at time.Time
}

// candidate is one elector campaigning in its own goroutine, as its own
// API user.
type candidate struct {
	user    string
	release bool

	cancel  context.CancelFunc
	done    chan struct{}
	leading atomic.Bool

	mu sync.Mutex
	// stoppedAt is when its context was cancelled (zero while running).
	stoppedAt time.Time
	// runErr is what its Run returned (ours only).
	runErr error
}

// startCandidate starts an elector of cfg for Lease ns/lease. release
// selects a graceful stop (the Lease is released when its context ends) or
// a crash (it is left held). Every "started leading" goes to led.
func startCandidate(ctx context.Context, cfg configuration, rc *rest.Config, ns, lease, user string, release bool, led chan<- leadEvent) (*candidate, error) {
	c := &candidate{user: user, release: release, done: make(chan struct{})}
	onLead := func() {
		at := time.Now()
		c.leading.Store(true)
		select {
		case led <- leadEvent{c: c, at: at}:
		default:
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	c.cancel = cancel
	if cfg.anchor {
		cs, err := kubernetes.NewForConfig(rc)
		if err != nil {
			cancel()
			return nil, err
		}
		le, err := clientgoelection.NewLeaderElector(clientgoelection.LeaderElectionConfig{
			Lock: &resourcelock.LeaseLock{
				LeaseMeta:  metav1.ObjectMeta{Namespace: ns, Name: lease},
				Client:     cs.CoordinationV1(),
				LockConfig: resourcelock.ResourceLockConfig{Identity: user},
			},
			LeaseDuration:   cfg.timings.LeaseDuration,
			RenewDeadline:   cfg.timings.RenewDeadline,
			RetryPeriod:     cfg.timings.RetryPeriod,
			ReleaseOnCancel: release,
			Name:            user,
			Callbacks: clientgoelection.LeaderCallbacks{
				OnStartedLeading: func(context.Context) { onLead() },
				OnStoppedLeading: func() { c.leading.Store(false) },
			},
		})
		if err != nil {
			cancel()
			return nil, err
		}
		go func() {
			defer close(c.done)
			le.Run(cctx)
		}()
		return c, nil
	}
	client, err := leaderelection.NewClient(rc)
	if err != nil {
		cancel()
		return nil, err
	}
	e, err := leaderelection.New(leaderelection.Config{
		Client: client, Namespace: ns, Name: lease, Identity: user,
		Timings: cfg.timings, Log: logr.Discard(), NoRelease: !release,
	})
	if err != nil {
		cancel()
		return nil, err
	}
	go func() {
		defer close(c.done)
		err := e.Run(cctx, func(leadCtx context.Context) error {
			onLead()
			<-leadCtx.Done()
			c.leading.Store(false)
			return nil
		})
		c.mu.Lock()
		c.runErr = err
		c.mu.Unlock()
	}()
	return c, nil
}

// stop cancels the candidate's context: a graceful stop or a crash, as
// chosen when it started.
func (c *candidate) stop() {
	c.mu.Lock()
	if c.stoppedAt.IsZero() {
		c.stoppedAt = time.Now()
	}
	c.mu.Unlock()
	c.cancel()
}

func (c *candidate) stopped() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stoppedAt
}

// wait waits for Run to return, at most d.
func (c *candidate) wait(d time.Duration) bool {
	select {
	case <-c.done:
		return true
	case <-time.After(d):
		return false
	}
}
