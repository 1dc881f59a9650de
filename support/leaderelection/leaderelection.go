package leaderelection

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/uuid"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/config"
	"github.com/hypershift-le/hypershift/support/startup"
)

// Identity returns the identity a candidate holds the Lease under: the pod's
// name from $POD_NAME (hyperv1.PodNameEnv), so that spec.holderIdentity names the pod; outside a
// pod, the host name with a unique suffix.
func Identity() (string, error) {
	if name := os.Getenv(hyperv1.PodNameEnv); name != "" {
		return name, nil
	}
	host, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("failed to get the host name for the leader identity (set %s): %w", hyperv1.PodNameEnv, err)
	}
	return host + "_" + string(uuid.NewUUID()), nil
}

// NewClient returns the elector's own Lease client: its own rate limit, so
// that the controllers' requests never delay a renewal, and a user agent
// that tells its requests apart. Requests have no client timeout (the
// watch is long); the elector bounds each one with its context.
func NewClient(restConfig *rest.Config) (coordinationv1client.LeasesGetter, error) {
	cfg := rest.CopyConfig(restConfig)
	cfg.Timeout = 0
	cfg = rest.AddUserAgent(cfg, "leader-election")
	c, err := coordinationv1client.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("failed to create the Lease client: %w", err)
	}
	return c, nil
}

// Election names what a manager elects with.
type Election struct {
	// Enabled turns election on; off, every runnable starts at once.
	Enabled bool
	// Namespace and Name name the Lease.
	Namespace, Name string
	// Timings must pass Validate.
	Timings config.Timings
	// Identity is the candidate's holder identity; empty means Identity()
	// (the pod's name). Processes that run several candidates set it.
	Identity string
	// Annotations are set on the Lease when this candidate takes it
	// (Config.Annotations).
	Annotations map[string]string
}

// NewManager returns a controller-runtime manager that serves health
// (startup.AddProbes) and metrics and syncs its caches on every replica, and starts the runnables
// that need leader election (controllers, by controller-runtime's rule)
// only while this replica leads. Added runnables go through the returned
// manager; controllers are set up with AddPerTerm, once per term. Leading ends the manager's Start with an error wrapping ErrLost
// when the Lease is lost; when Start's context ends, the leader-only
// runnables stop first, then the Lease is released. It returns the
// elector, nil when election is off.
//
// Creating the manager asks the API server about the cached kinds; while it
// does not answer, NewManager waits for it (startup.AwaitAPIServer) until
// ctx ends.
func NewManager(ctx context.Context, restConfig *rest.Config, opts ctrl.Options, election Election, log logr.Logger) (*Manager, *Elector, error) {
	// The elector first: its guard on the timings must stop the process at
	// once, not after the API server has answered.
	var elector *Elector
	if election.Enabled {
		identity := election.Identity
		if identity == "" {
			var err error
			if identity, err = Identity(); err != nil {
				return nil, nil, err
			}
		}
		client, err := NewClient(restConfig)
		if err != nil {
			return nil, nil, err
		}
		if elector, err = New(Config{
			Client: client, Namespace: election.Namespace, Name: election.Name, Identity: identity,
			Timings: election.Timings, Log: log.WithName("leader-election"), Annotations: election.Annotations,
		}); err != nil {
			return nil, nil, err
		}
	}
	opts.LeaderElection = false
	mgr, err := startup.AwaitAPIServer(ctx, func() (manager.Manager, error) {
		mgr, err := ctrl.NewManager(restConfig, opts)
		if err != nil {
			return nil, fmt.Errorf("failed to create the manager: %w", err)
		}
		return mgr, nil
	})
	if err != nil {
		return nil, nil, err
	}
	if err := startup.AddProbes(mgr); err != nil {
		return nil, nil, err
	}
	if elector == nil {
		return &Manager{Manager: mgr, direct: true}, nil, nil
	}
	if err := mgr.AddReadyzCheck("leader-election", elector.Ready); err != nil {
		return nil, nil, fmt.Errorf("failed to add the election's readiness check: %w", err)
	}
	gated := &Manager{Manager: mgr, elected: make(chan struct{})}
	if err := mgr.Add(&electionRunnable{elector: elector, gated: gated}); err != nil {
		return nil, nil, fmt.Errorf("failed to add the election: %w", err)
	}
	registerMetrics(elector)
	return gated, elector, nil
}

// Manager is a controller-runtime manager whose leader-only work runs only
// while this replica leads, once per term: the controllers set up with
// AddPerTerm, and the runnables added with Add that need leader election
// (which must therefore be startable again).
type Manager struct {
	manager.Manager
	mu     sync.Mutex
	setups []func(manager.Manager) error
	gated  []manager.Runnable
	// direct is set when election is off: everything runs with the manager.
	direct bool
	// elected is closed when the first term starts (see Elected).
	elected     chan struct{}
	electedOnce sync.Once
	// lost is the election's loss, kept for Start: a loss that arrives
	// while the manager already stops (SIGTERM during a freeze) is only
	// logged by controller-runtime, and the process would exit 0.
	lost error
}

// Start runs the manager and returns, beside its own error, a loss of the
// Lease that ended the election.
func (m *Manager) Start(ctx context.Context) error {
	err := m.Manager.Start(ctx)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lost != nil && !errors.Is(err, ErrLost) {
		return errors.Join(err, m.lost)
	}
	return err
}

// Elected is closed once this replica has started leading (its first
// term), and never on a standby: controller-runtime's own Elected() closes
// at start on every replica here, because its election is off. With
// election off, it is controller-runtime's (closed at start).
func (m *Manager) Elected() <-chan struct{} {
	if m.direct {
		return m.Manager.Elected()
	}
	return m.elected
}

// AddPerTerm registers setup, which sets up leader-only controllers on the
// manager it is given: it runs at the start of every term (see
// term_manager.go).
func (m *Manager) AddPerTerm(setup func(manager.Manager) error) error {
	if m.direct {
		return setup(m.Manager)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.setups = append(m.setups, setup)
	return nil
}

// Add starts r with the manager when it needs no leader election (it says
// so with NeedLeaderElection() == false), and otherwise once per term. A
// controller cannot start twice: set controllers up with AddPerTerm.
func (m *Manager) Add(r manager.Runnable) error {
	if ler, ok := r.(manager.LeaderElectionRunnable); m.direct || (ok && !ler.NeedLeaderElection()) {
		return m.Manager.Add(r)
	}
	if _, isController := r.(interface{ GetLogger() logr.Logger }); isController {
		return errors.New("a controller cannot be started in more than one term: set it up with AddPerTerm")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gated = append(m.gated, r)
	return nil
}

// lead runs one term: the per-term controllers and the gated runnables,
// until ctx ends or one fails.
func (m *Manager) lead(ctx context.Context) error {
	m.mu.Lock()
	setups, gated := m.setups, m.gated
	m.mu.Unlock()
	m.electedOnce.Do(func() { close(m.elected) })
	return runTerm(ctx, m.Manager, setups, gated)
}

// recordLoss keeps the loss of a Lease for Start.
func (m *Manager) recordLoss(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lost = errors.Join(m.lost, err)
}

// electionRunnable campaigns beside the caches, health and metrics.
type electionRunnable struct {
	elector *Elector
	gated   *Manager
}

func (r *electionRunnable) NeedLeaderElection() bool { return false }

func (r *electionRunnable) Start(ctx context.Context) error {
	defer unregisterMetrics(r.elector)
	err := r.elector.Run(ctx, r.gated.lead)
	if errors.Is(err, ErrLost) {
		r.gated.recordLoss(err)
	}
	return err
}

// electors reports every running elector of the process to the
// controller-runtime metrics registry.
var electors = struct {
	sync.Mutex
	once sync.Once
	set  map[*Elector]struct{}
}{set: map[*Elector]struct{}{}}

type electorsCollector struct{}

func (electorsCollector) Describe(ch chan<- *prometheus.Desc) { (&Elector{}).Describe(ch) }

func (electorsCollector) Collect(ch chan<- prometheus.Metric) {
	electors.Lock()
	defer electors.Unlock()
	for e := range electors.set {
		e.Collect(ch)
	}
}

func registerMetrics(e *Elector) {
	electors.once.Do(func() {
		// controller-runtime registers leader_election_master_status for
		// its own election, which NewManager turns off, so it would stay
		// unset: the electors report it instead. Unregister matches by
		// the metric's name.
		metrics.Registry.Unregister(prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "leader_election_master_status", Help: "-"}, []string{"name"}))
		metrics.Registry.MustRegister(electorsCollector{})
	})
	electors.Lock()
	defer electors.Unlock()
	electors.set[e] = struct{}{}
}

func unregisterMetrics(e *Elector) {
	electors.Lock()
	defer electors.Unlock()
	delete(electors.set, e)
}
