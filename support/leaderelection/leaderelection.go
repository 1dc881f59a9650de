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

	"github.com/hypershift-le/hypershift/support/config"
	"github.com/hypershift-le/hypershift/support/process"
)

// PodNameEnv is the environment variable (downward API metadata.name) whose
// value becomes the holder identity.
const PodNameEnv = "POD_NAME"

// Identity returns the identity a candidate holds the Lease under: the pod's
// name from $POD_NAME, so that spec.holderIdentity names the pod; outside a
// pod, the host name with a unique suffix.
func Identity() (string, error) {
	if name := os.Getenv(PodNameEnv); name != "" {
		return name, nil
	}
	host, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("failed to get the host name for the leader identity (set %s): %w", PodNameEnv, err)
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
	Timings config.LeaderElection
}

// NewManager returns a controller-runtime manager that serves health
// (process.AddProbes) and metrics and syncs its caches on every replica, and starts the runnables
// that need leader election (controllers, by controller-runtime's rule)
// only while this replica leads. Added runnables go through the returned
// manager. Leading ends the manager's Start with an error wrapping ErrLost
// when the Lease is lost; when Start's context ends, the leader-only
// runnables stop first, then the Lease is released. It returns the
// elector, nil when election is off.
//
// Creating the manager asks the API server about the cached kinds; while it
// does not answer, NewManager waits for it (process.AwaitAPIServer) until
// ctx ends.
func NewManager(ctx context.Context, restConfig *rest.Config, opts ctrl.Options, election Election, log logr.Logger) (manager.Manager, *Elector, error) {
	opts.LeaderElection = false
	mgr, err := process.AwaitAPIServer(ctx, func() (manager.Manager, error) {
		mgr, err := ctrl.NewManager(restConfig, opts)
		if err != nil {
			return nil, fmt.Errorf("failed to create the manager: %w", err)
		}
		return mgr, nil
	})
	if err != nil {
		return nil, nil, err
	}
	if err := process.AddProbes(mgr); err != nil {
		return nil, nil, err
	}
	if !election.Enabled {
		return mgr, nil, nil
	}
	identity, err := Identity()
	if err != nil {
		return nil, nil, err
	}
	client, err := NewClient(restConfig)
	if err != nil {
		return nil, nil, err
	}
	elector, err := New(Config{
		Client: client, Namespace: election.Namespace, Name: election.Name, Identity: identity,
		Timings: election.Timings, Log: log.WithName("leader-election"),
	})
	if err != nil {
		return nil, nil, err
	}
	if err := mgr.AddReadyzCheck("leader-election", elector.Ready); err != nil {
		return nil, nil, fmt.Errorf("failed to add the election's readiness check: %w", err)
	}
	gated := &gatedManager{Manager: mgr}
	if err := mgr.Add(&electionRunnable{elector: elector, gated: gated}); err != nil {
		return nil, nil, fmt.Errorf("failed to add the election: %w", err)
	}
	registerMetrics(elector)
	return gated, elector, nil
}

// gatedManager holds back the runnables that need leader election.
type gatedManager struct {
	manager.Manager
	mu      sync.Mutex
	started bool
	gated   []manager.Runnable
	// lost is the election's loss, kept for Start: a loss that arrives
	// while the manager already stops (SIGTERM during a freeze) is only
	// logged by controller-runtime, and the process would exit 0.
	lost error
}

// Start runs the manager and returns, beside its own error, a loss of the
// Lease that ended the election.
func (m *gatedManager) Start(ctx context.Context) error {
	err := m.Manager.Start(ctx)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lost != nil && !errors.Is(err, ErrLost) {
		return errors.Join(err, m.lost)
	}
	return err
}

// Add starts r with the manager when it needs no leader election (it says
// so with NeedLeaderElection() == false), and otherwise only while leading.
func (m *gatedManager) Add(r manager.Runnable) error {
	if ler, ok := r.(manager.LeaderElectionRunnable); ok && !ler.NeedLeaderElection() {
		return m.Manager.Add(r)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started {
		return errors.New("cannot add a leader-only runnable once this replica leads")
	}
	m.gated = append(m.gated, r)
	return nil
}

// lead runs every gated runnable until ctx ends or one fails.
func (m *gatedManager) lead(ctx context.Context) error {
	m.mu.Lock()
	m.started = true
	runnables := m.gated
	m.mu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(runnables))
	for _, r := range runnables {
		go func() { errs <- r.Start(ctx) }()
	}
	var all []error
	for range runnables {
		if err := <-errs; err != nil {
			all = append(all, err)
			cancel()
		}
	}
	return errors.Join(all...)
}

// electionRunnable campaigns beside the caches, health and metrics.
type electionRunnable struct {
	elector *Elector
	gated   *gatedManager
}

func (r *electionRunnable) NeedLeaderElection() bool { return false }

func (r *electionRunnable) Start(ctx context.Context) error {
	defer unregisterMetrics(r.elector)
	err := r.elector.Run(ctx, r.gated.lead)
	if errors.Is(err, ErrLost) {
		r.gated.mu.Lock()
		r.gated.lost = err
		r.gated.mu.Unlock()
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
	electors.once.Do(func() { metrics.Registry.MustRegister(electorsCollector{}) })
	electors.Lock()
	defer electors.Unlock()
	electors.set[e] = struct{}{}
}

func unregisterMetrics(e *Elector) {
	electors.Lock()
	defer electors.Unlock()
	delete(electors.set, e)
}
