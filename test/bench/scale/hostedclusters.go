// The hostedclusters part: its flags, the state of one run, and the run
// itself from start to report (see the package comment in main.go).

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/operator"
	"github.com/hypershift-le/hypershift/support/releaseinfo/releasetest"
	"github.com/hypershift-le/hypershift/test/auditlog"
	"github.com/hypershift-le/hypershift/test/bench/report"
	"github.com/hypershift-le/hypershift/test/testenv"
)

// hcOptions are the hostedclusters part's flags.
type hcOptions struct {
	count, namespaces, creators  int
	poll, quiet, convergeTimeout time.Duration
	binary                       string
	kubeconfigFlag               bool
	// workers is the HO's --max-concurrent-reconciles; 0 leaves its
	// default.
	workers int
	// failover kills the leader once converged, a standby having run for
	// failoverWarm (see failover).
	failover     bool
	failoverWarm time.Duration
	// replicas HO processes run, with shards as their --shards.
	replicas, shards int
}

var hcFlags hcOptions

func init() {
	flag.IntVar(&hcFlags.count, "hostedclusters", 1000, "How many HostedClusters to create.")
	flag.IntVar(&hcFlags.namespaces, "hostedcluster-namespaces", 10, "How many namespaces to spread the HostedClusters over.")
	flag.IntVar(&hcFlags.creators, "creators", 16, "How many HostedClusters are created concurrently.")
	flag.DurationVar(&hcFlags.poll, "poll", 2*time.Second, "How often to LIST, as admin, what the hypershift-operator created.")
	flag.DurationVar(&hcFlags.quiet, "quiet", 2*time.Minute, "How long to count the hypershift-operator's writes once everything converged (at least 2m for the report).")
	flag.DurationVar(&hcFlags.convergeTimeout, "converge-timeout", 45*time.Minute, "Fail when the HostedClusters have not converged this long after the first create.")
	flag.StringVar(&hcFlags.binary, "operator-binary", "", "The hypershift-operator binary (default bin/hypershift-operator, or one built from the source when that is missing or older than the source).")
	flag.IntVar(&hcFlags.workers, "max-concurrent-reconciles", 0, "The hypershift-operator's --max-concurrent-reconciles (0: its default).")
	flag.BoolVar(&hcFlags.failover, "failover", true, "Once converged, start a standby hypershift-operator, kill the leader with SIGKILL and measure the standby's takeover and first pass.")
	flag.DurationVar(&hcFlags.failoverWarm, "failover-warm", 30*time.Second, "How long the standby runs before the leader is killed.")
	flag.IntVar(&hcFlags.replicas, "operator-replicas", 1, "How many hypershift-operator replicas run (with more than one, give -shards: otherwise the others only stand by).")
	flag.IntVar(&hcFlags.shards, "shards", 1, "The hypershift-operator's --shards.")
	flag.BoolVar(&hcFlags.kubeconfigFlag, "operator-kubeconfig-flag", false, "Give the hypershift-operator its kubeconfig with --kubeconfig instead of $KUBECONFIG; client-go's default client-side rate limit (5 requests/s, burst 10, per REST client, of which controller-runtime makes one per resource) then applies, which the $KUBECONFIG and in-cluster paths turn off.")
}

const (
	// operatorNamespace is the HO's namespace, where its Lease lives.
	operatorNamespace = "hypershift"
	// operatorUser is the HO's user in the audit log.
	operatorUser = "hypershift-operator"
	// operatorPod is the HO's POD_NAME, so its Lease's holder identity.
	operatorPod = "hypershift-operator-0"
	// releaseVersion is the version of the release payload the
	// HostedClusters name.
	releaseVersion = "4.17.0"
	// minQuiet is the shortest quiet window the report accepts.
	minQuiet = 2 * time.Minute
)

// hcRun is one run of the hostedclusters part.
type hcRun struct {
	env     *testenv.Env
	admin   client.Client
	fencing bool
	kinds   []objectKind
	// clusters are the HostedClusters to create, with their pull secrets.
	clusters []*hyperv1.HostedCluster
	secrets  []*corev1.Secret
	// owner maps "resource key" of every expected object to its
	// HostedCluster's index.
	owner map[string]int
	ho    *process
	// metricsURL is the HO's metrics endpoint.
	metricsURL string
	// others are the replicas beside ho (-operator-replicas), with their
	// metrics endpoints; shards is every replica's --shards.
	others       []*process
	otherMetrics []string
	replicas     int
	shards       int
	logDir       string
	// workers is the HO's worker count.
	workers int
	// kubeconfig is the HO's, given as --kubeconfig when kubeconfigFlag.
	kubeconfig     string
	kubeconfigFlag bool
	// election are the HO's own election timings (its flags' defaults).
	election string

	// The milestones. settledButSilence is when every status was
	// complete but for the silent CPO Lease (waitingForSilence).
	operatorStarted, firstCreate, allCreated, firstComplete, allObjects, settledButSilence, settled, drained, quietStart, quietEnd time.Time
	// cpuAt are the HO's CPU time at the first create, at the start of the
	// quiet window and at its end.
	cpuAtFirstCreate, cpuAtQuietStart, cpuAtQuietEnd time.Duration
	// apiServerPID is the management kube-apiserver's process; apiCPUAt
	// its CPU time at the first create and once converged.
	apiServerPID                            int
	apiCPUAtFirstCreate, apiCPUAtQuietStart time.Duration
	// apiRSS and apiHWM are the management kube-apiserver's VmRSS and
	// VmHWM once converged (at the start of the quiet window).
	apiRSS, apiHWM int64
}

// hostedClusters runs the hostedclusters part: see the package comment.
func hostedClusters(ctx context.Context, env *testenv.Env) (string, error) {
	markdown, _, err := hostedClustersWith(ctx, env, hcFlags, "scale-hostedclusters")
	return markdown, err
}

// tenThousandCount and tenThousandNamespaces are the hostedclusters10000
// part's HostedClusters and the namespaces they are spread over (100 per
// namespace, as the 1,000 are).
const (
	tenThousandCount      = 10000
	tenThousandNamespaces = 100
)

// hostedClusters10000 runs the hostedclusters part with 10,000
// HostedClusters into a section of its own (the other flags as given): what
// one management cluster and one hypershift-operator hold. It runs only when
// named in -run.
func hostedClusters10000(ctx context.Context, env *testenv.Env) (string, error) {
	o := hcFlags
	o.count, o.namespaces = tenThousandCount, tenThousandNamespaces
	markdown, _, err := hostedClustersWith(ctx, env, o, "scale-hostedclusters-10000")
	return markdown, err
}

// hostedClustersWith runs the hostedclusters part with o, set beside the
// previous run on record in section ("": none), and returns its results
// too.
func hostedClustersWith(ctx context.Context, env *testenv.Env, o hcOptions, section string) (markdown string, res *hcResult, err error) {
	switch {
	case o.count < 1 || o.namespaces < 1 || o.creators < 1:
		return "", nil, fmt.Errorf("-hostedclusters, -hostedcluster-namespaces and -creators must be positive")
	case o.poll <= 0 || o.quiet <= 0:
		return "", nil, fmt.Errorf("-poll and -quiet must be positive")
	case o.replicas < 1 || o.shards < 1:
		return "", nil, fmt.Errorf("-operator-replicas and -shards must be positive")
	}
	if o.replicas > 1 && o.failover {
		fmt.Println("-operator-replicas above 1: no failover run (it kills the one leader of one replica's run)")
		o.failover = false
	}
	if o.quiet < minQuiet {
		fmt.Printf("WARNING: -quiet=%s is shorter than the %s the report asks for\n", o.quiet, minQuiet)
	}
	// The previous run on record, to set this one beside.
	path, err := report.File()
	if err != nil {
		return "", nil, err
	}
	var previous string
	if section != "" {
		if previous, err = report.ReadSection(path, section); err != nil {
			return "", nil, err
		}
	}
	r := &hcRun{env: env, owner: map[string]int{}}
	adminConfig := rest.CopyConfig(env.Config)
	adminConfig.QPS, adminConfig.Burst = -1, 0
	if r.admin, err = client.New(adminConfig, client.Options{Scheme: env.Scheme}); err != nil {
		return "", nil, fmt.Errorf("failed to create the admin client: %w", err)
	}
	if r.logDir, err = os.MkdirTemp("", "bench-scale-"); err != nil {
		return "", nil, err
	}
	defer func() {
		if err != nil && ctx.Err() == nil {
			fmt.Fprintf(os.Stderr, "the hypershift-operator's log is kept in %s\n", r.logDir)
			return
		}
		_ = os.RemoveAll(r.logDir)
	}()

	// The release payload every HostedCluster names, from a registry in
	// this process; the HO reads it over plain HTTP on 127.0.0.1.
	server := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer server.Close()
	host := strings.TrimPrefix(server.URL, "http://")
	releaseImage, err := pushRelease(ctx, host)
	if err != nil {
		return "", nil, err
	}
	// What the HO itself asks the API server before it fences.
	fencing, err := operator.DetectFencing(env.Config, true)
	if err != nil {
		return "", nil, err
	}
	r.fencing = fencing.Unavailable == ""
	r.kinds = objectKinds
	r.plan(o.count, o.namespaces, releaseImage, releasetest.DockerConfigJSON(host, "bench", "bench"))

	// The HO, its RSS sampled every second until the part ends.
	binary, removeBinary, err := operatorBinary(o.binary)
	if err != nil {
		return "", nil, err
	}
	defer removeBinary()
	defer func() {
		if r.ho == nil {
			return
		}
		if stopErr := r.ho.Stop(30 * time.Second); stopErr != nil && err == nil {
			fmt.Fprintf(os.Stderr, "the hypershift-operator exited with %v when stopped\n", stopErr)
		}
	}()
	defer r.stopOthers()
	if err := r.startOperator(ctx, binary, o); err != nil {
		return "", nil, err
	}
	stopSampling := make(chan struct{})
	defer close(stopSampling)
	for _, p := range r.operators() {
		go p.sampleMemory(time.Second, stopSampling)
	}

	if err := r.converge(ctx, o.creators, o.poll, o.convergeTimeout); err != nil {
		return "", nil, r.withLog(err)
	}
	settledMetrics, err := r.drain(ctx, 5*time.Minute)
	if err != nil {
		return "", nil, r.withLog(err)
	}
	if err := r.quiet(ctx, o.quiet); err != nil {
		return "", nil, r.withLog(err)
	}
	endMetrics, err := r.scrapeOperators()
	if err != nil {
		return "", nil, fmt.Errorf("failed to read the hypershift-operator's metrics: %w", err)
	}
	rss, hwm, err := r.ho.memory()
	if err != nil {
		return "", nil, fmt.Errorf("failed to read the hypershift-operator's memory: %w", err)
	}
	var failover *failoverResult
	if o.failover {
		if failover, err = r.failover(ctx, binary, o.failoverWarm, 10*time.Minute); err != nil {
			return "", nil, err
		}
	}
	if err := r.ho.Stop(30 * time.Second); err != nil {
		fmt.Fprintf(os.Stderr, "the hypershift-operator exited with %v when stopped\n", err)
	}
	r.stopOthers()

	events, err := env.AuditEvents()
	if err != nil {
		return "", nil, err
	}
	requests := auditlog.Requests(events)
	res = r.analyze(requests)
	res.rss, res.hwm, res.sampledRSS = rss, hwm, r.ho.sampledPeakRSS()
	for _, p := range r.others {
		// The largest replica's.
		res.sampledRSS = max(res.sampledRSS, p.sampledPeakRSS())
		if _, otherHWM, err := p.memory(); err == nil {
			res.hwm = max(res.hwm, otherHWM)
		}
	}
	res.settledMetrics, res.endMetrics = settledMetrics, endMetrics
	res.print()
	markdown = res.markdown(o)
	if failover != nil {
		failover.analyze(byUser(requests, operatorUser))
		failover.print()
		markdown += failover.markdown(len(r.clusters), r.election)
	}
	if section != "" {
		against := comparison(previous, markdown)
		fmt.Printf("\nagainst the previous run on record:\n%s", against)
		markdown += "\n### Against the previous run on record\n\nThe headline figures of the section this command wrote before, beside this run's (below 1: lower now).\n\n" + against
	}
	if n := len(res.quietOtherWrites); n > 0 {
		return markdown, res, fmt.Errorf("the hypershift-operator wrote %d times (%.1f/min) while converged, other than renewing its own Lease: see above", n, res.perMinute(n))
	}
	return markdown, res, nil
}

// withLog adds the tail of the HO's log to err.
func (r *hcRun) withLog(err error) error {
	if r.ho == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%w\n--- the hypershift-operator's log, last lines:\n%s", err, r.ho.logTail(4000))
}
