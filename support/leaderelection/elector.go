package leaderelection

import (
	"context"
	"errors"
	"maps"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/utils/clock"

	"github.com/hypershift-le/hypershift/support/config"
)

// ErrLost is wrapped by Run's error when this candidate stopped leading
// without being asked to: its process must end.
var ErrLost = errors.New("leader election lost")

// Config configures an Elector.
type Config struct {
	// Client reaches the API server. Give the elector a client of its own,
	// so that the controllers' client-side rate limit never delays a renewal.
	Client coordinationv1client.LeasesGetter
	// Namespace and Name name the Lease.
	Namespace, Name string
	// Identity is this candidate's spec.holderIdentity: unique per process
	// that may run at the same time (the pod's name).
	Identity string
	// Timings must pass Validate.
	Timings config.Timings
	// Clock is the real clock when nil.
	Clock clock.WithTicker
	// Log receives the elector's decisions.
	Log logr.Logger
	// NoRelease leaves the Lease held when Run's context ends, as a crashed
	// process would. For tests and benchmarks.
	NoRelease bool
	// Contend, when set, is asked each time the Lease may be taken (free,
	// or expired by the follower's rules): while it says no, the candidate
	// only follows, asking again every retry period. A shard's candidate
	// takes its Lease only while the shard is assigned to it (shards.go).
	Contend func() bool
	// Annotations are set on the Lease when this candidate creates or
	// takes it (renewals keep what is there): facts about the holder's
	// configuration for readers such as `hypershift get leaders`.
	Annotations map[string]string
}

// Elector campaigns for one Lease; see the package documentation.
type Elector struct {
	api       leaseAPI
	namespace string
	name      string
	lease     string
	identity  string
	timings   config.Timings
	clock     clock.WithTicker
	log       logr.Logger
	release   bool
	contend   func() bool
	annotate  map[string]string

	mu     sync.Mutex
	status Status

	contact contact

	// onWait, in tests, learns each wait before the loop blocks: how long
	// until it acts, or false for "until an observation".
	onWait func(time.Duration, bool)
	// ignoreGaps, in tests, turns the incumbent's preference off: a
	// follower counts the lease duration from the last change it saw, even
	// across a time it could not observe the Lease (the negative control).
	ignoreGaps bool
}

// Status is what an elector knows, for metrics and logs.
type Status struct {
	// Leading is true while this candidate runs its leader-only work.
	Leading bool
	// Holder is the holder this candidate last saw ("" for none).
	Holder string
	// LastRenew is when the last successful acquisition or renewal by this
	// candidate started; zero before the first.
	LastRenew time.Time
	// Transitions counts the changes of the holder from one candidate to
	// another this candidate witnessed: not its first sighting, not a
	// release (a holder of ""), not the first holder of a Lease nobody held.
	Transitions int
}

// New returns an elector for cfg.
func New(cfg Config) (*Elector, error) {
	if err := cfg.Timings.Validate(); err != nil {
		return nil, err
	}
	if cfg.Client == nil || cfg.Namespace == "" || cfg.Name == "" || cfg.Identity == "" {
		return nil, errors.New("leader election needs a client, the Lease's namespace and name, and an identity")
	}
	return newElector(cfg, clientAPI{leases: cfg.Client.Leases(cfg.Namespace), name: cfg.Name}), nil
}

func newElector(cfg Config, api leaseAPI) *Elector {
	c := cfg.Clock
	if c == nil {
		c = clock.RealClock{}
	}
	e := &Elector{
		namespace: cfg.Namespace,
		name:      cfg.Name,
		lease:     cfg.Namespace + "/" + cfg.Name,
		identity:  cfg.Identity,
		timings:   cfg.Timings,
		clock:     c,
		log:       cfg.Log.WithValues("lease", cfg.Namespace+"/"+cfg.Name, "identity", cfg.Identity),
		release:   !cfg.NoRelease,
		contend:   cfg.Contend,
		annotate:  maps.Clone(cfg.Annotations),
	}
	e.api = trackedAPI{api: api, e: e}
	return e
}

// Identity is the candidate's holder identity; "" for a nil elector
// (election off).
func (e *Elector) Identity() string {
	if e == nil {
		return ""
	}
	return e.identity
}

// Status returns what the elector knows now.
func (e *Elector) Status() Status {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.status
}

// Run campaigns until ctx ends. While it leads, it runs lead with a context
// that ends when leadership does; lead runs once per term. When ctx ends, it
// waits for lead to return and releases the Lease, then returns nil; if it
// finds then that it had already lost the Lease, it returns an error
// wrapping ErrLost. When it stops leading because another candidate holds
// the Lease, or it was deleted, or the API server refused its renewals, it
// returns an error wrapping ErrLost at once. When it stops leading because
// no renewal succeeded by the renew deadline, the API server not answering
// (or the process frozen), it keeps running cut off (see the package
// documentation) and leads again, in a new term, once a compare-and-swap
// renewal succeeds. When lead returns on its own, it releases
// and returns lead's error.
func (e *Elector) Run(ctx context.Context, lead func(context.Context) error) error {
	obsCtx, stopObserving := context.WithCancel(ctx)
	defer stopObserving()
	observations := make(chan observation)
	go e.observe(obsCtx, observations)

	c := &campaign{e: e, observations: observations, timer: e.clock.NewTimer(time.Hour)}
	defer c.timer.Stop()
	next := c.follow
	for {
		state, err := next(ctx, lead)
		switch state {
		case following:
			next = c.follow
		case holding:
			next = c.hold
		case cutOff:
			next = c.reconnect
		default:
			return err
		}
	}
}

// state is where a campaign goes next.
type state int

const (
	// done ends Run.
	done state = iota
	// following waits for the Lease to be free and takes it.
	following
	// holding runs a term of leader-only work and renews the Lease.
	holding
	// cutOff holds no term: the API server stopped answering before the
	// renew deadline, and the Lease may still name this candidate.
	cutOff
)

func (e *Elector) setRenewed(renewed time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.status.LastRenew = renewed
}

func (e *Elector) setLeading(leading bool, renewed time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.status.Leading = leading
	if leading {
		e.status.LastRenew = renewed
	}
}
