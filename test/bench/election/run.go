package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/hypershift-le/hypershift/test/testenv"
)

// group is three candidates of one configuration in a namespace of their
// own: the steady group, or one handover sample.
type group struct {
	cfg  configuration
	kind string // kindSteady, kindGraceful or kindCrash
	idx  int
	ns   string
	// users are the candidates' API users (and identities), c1..c3.
	users   []string
	configs []*rest.Config
	cands   []*candidate
	led     chan leadEvent

	// For samples: the leader that was stopped, when, and who took over
	// when.
	electedAt  time.Time
	old, new   *candidate
	cancelAt   time.Time
	takeoverAt time.Time
	// goneAt is when the stopped leader's pod began to go, or its
	// container was reported in back-off (pod kinds).
	goneAt time.Time
	err    error
}

const (
	kindSteady   = "steady"
	kindGraceful = "graceful"
	kindCrash    = "crash"
	// kindPodDeleted and kindPodFailed are crashes whose pod then goes:
	// force-deleted, or reported Failed. kindBackOff is a crash whose
	// container the kubelet then holds in restart back-off, its pod
	// Running (a crash loop). The parent arbitrates those.
	kindPodDeleted = "pod-deleted"
	kindPodFailed  = "pod-failed"
	kindBackOff    = "back-off"
	candidates     = 3
)

// sampleKinds are the kinds of samples taken -samples times each.
var sampleKinds = []string{kindGraceful, kindCrash, kindPodDeleted, kindPodFailed, kindBackOff}

func (g *group) takeover() time.Duration { return g.takeoverAt.Sub(g.cancelAt) }

// newGroup creates the namespace and the three users.
func newGroup(ctx context.Context, env *testenv.Env, cfg configuration, kind string, idx int) (*group, error) {
	name := fmt.Sprintf("%s-%s", cfg.key, kind)
	if kind != kindSteady {
		name = fmt.Sprintf("%s-%d", name, idx)
	}
	g := &group{cfg: cfg, kind: kind, idx: idx, ns: "election-" + name, led: make(chan leadEvent, 16)}
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: g.ns}}); err != nil {
		return nil, fmt.Errorf("failed to create namespace %s: %w", g.ns, err)
	}
	for i := 1; i <= candidates; i++ {
		user := fmt.Sprintf("%s-c%d", name, i)
		rc, err := env.AddUser(user, "system:masters")
		if err != nil {
			return nil, err
		}
		g.users = append(g.users, user)
		g.configs = append(g.configs, rc)
	}
	if g.podKind() {
		if err := g.claimNamespace(ctx, env); err != nil {
			return nil, err
		}
	}
	return g, nil
}

func (g *group) start(ctx context.Context) error {
	for i, user := range g.users {
		release := g.kind == kindSteady || g.kind == kindGraceful
		c, err := startCandidate(ctx, g.cfg, g.configs[i], g.ns, g.leaseOf(), user, release, g.led)
		if err != nil {
			return fmt.Errorf("failed to start candidate %s: %w", user, err)
		}
		g.cands = append(g.cands, c)
	}
	return nil
}

// stopAll stops every candidate and waits for them.
func (g *group) stopAll() {
	for _, c := range g.cands {
		c.stop()
	}
	for _, c := range g.cands {
		if !c.wait(g.cfg.timings.RenewDeadline + 5*time.Second) {
			fmt.Printf("  %s: candidate %s did not stop in time\n", g.ns, c.user)
		}
	}
}

// runSteady campaigns until the window ends.
func (g *group) runSteady(ctx context.Context, until time.Time) error {
	if err := g.start(ctx); err != nil {
		return err
	}
	defer g.stopAll()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(until)):
		return nil
	}
}

// runSample elects a leader, lets it run a random part of its renew
// period, stops it (gracefully or as a crash) and waits for a standby to
// start leading.
func (g *group) runSample(ctx context.Context, env *testenv.Env) error {
	err := g.sample(ctx, env)
	g.stopAll()
	g.err = err
	return err
}

func (g *group) sample(ctx context.Context, env *testenv.Env) error {
	if err := g.start(ctx); err != nil {
		return err
	}
	limit := 2*g.cfg.timings.LeaseDuration + 4*g.cfg.timings.RetryPeriod + 30*time.Second
	var first leadEvent
	select {
	case <-ctx.Done():
		return ctx.Err()
	case first = <-g.led:
	case <-time.After(limit):
		return errors.New("no candidate started leading")
	}
	g.electedAt, g.old = first.at, first.c
	// Stop the leader at a random point of its renew cycle, once the
	// standbys have seen the Lease.
	pause := 3*time.Second + rand.N(g.cfg.renewPeriod())
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(pause):
	}
	if !g.old.leading.Load() {
		return fmt.Errorf("leader %s stopped leading on its own", g.old.user)
	}
	g.old.stop()
	g.cancelAt = g.old.stopped()
	if g.podKind() {
		g.goneAt = time.Now()
		if err := g.makePodGone(ctx, env); err != nil {
			return fmt.Errorf("failed to make the pod of %s gone: %w", g.old.user, err)
		}
	}
	deadline := time.After(limit)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			return fmt.Errorf("no standby started leading within %s of stopping %s", limit, g.old.user)
		case ev := <-g.led:
			if ev.c == g.old {
				continue
			}
			g.new, g.takeoverAt = ev.c, ev.at
			// Keep running a little, for the chart.
			select {
			case <-ctx.Done():
			case <-time.After(3 * time.Second):
			}
			return nil
		}
	}
}
