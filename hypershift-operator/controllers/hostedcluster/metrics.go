package hostedcluster

import (
	"context"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
)

// The per-HostedCluster durations, named as HyperShift's. Each is computed
// at scrape time from the HostedCluster's timestamps and version history,
// so it survives operator restarts and leader changes; a phase still under
// way reports how long it has lasted so far, so an alert on a threshold
// fires while the phase is stuck.
var (
	initialRolloutDesc = prometheus.NewDesc("hypershift_cluster_initial_rollout_duration_seconds",
		"Seconds from the HostedCluster's creation to the end of its first rollout (its oldest release Completed); while that rollout runs, the seconds so far.",
		[]string{"namespace", "name"}, nil)
	upgradeDesc = prometheus.NewDesc("hypershift_cluster_upgrade_duration_seconds",
		"Seconds the HostedCluster's latest upgrade took, from its start to its completion; while it runs, the seconds so far. Absent before the first upgrade.",
		[]string{"namespace", "name", "version"}, nil)
	deletionDesc = prometheus.NewDesc("hypershift_cluster_deletion_duration_seconds",
		"Seconds since the HostedCluster was deleted, while its teardown runs.",
		[]string{"namespace", "name"}, nil)
)

// durationCollector reports the durations of the HostedClusters list
// returns, while active says so.
type durationCollector struct {
	// ctx is the process's: a scrape's listing ends with it.
	ctx    context.Context
	list   func(context.Context) ([]hyperv1.HostedCluster, error)
	active func() bool
	clock  clock.PassiveClock
}

// NewDurationCollector returns the collector of the per-HostedCluster
// durations, reading HostedClusters through reader (the manager's cache).
// It reports only while active returns true (the replica leads), so that
// a standby's series do not double the leader's. A scrape's listing ends
// with ctx.
func NewDurationCollector(ctx context.Context, reader client.Reader, active func() bool) prometheus.Collector {
	return &durationCollector{ctx: ctx, clock: clock.RealClock{}, active: active, list: func(ctx context.Context) ([]hyperv1.HostedCluster, error) {
		list := &hyperv1.HostedClusterList{}
		if err := reader.List(ctx, list); err != nil {
			return nil, err
		}
		return list.Items, nil
	}}
}

// Describe implements prometheus.Collector.
func (c *durationCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- initialRolloutDesc
	ch <- upgradeDesc
	ch <- deletionDesc
}

// Collect implements prometheus.Collector.
func (c *durationCollector) Collect(ch chan<- prometheus.Metric) {
	if !c.active() {
		return
	}
	ctx, cancel := context.WithTimeout(c.ctx, 5*time.Second)
	defer cancel()
	hcs, err := c.list(ctx)
	if err != nil {
		ctrl.Log.WithName("metrics").Info("Failed to list HostedClusters for their durations", "err", err.Error())
		return
	}
	now := c.clock.Now()
	for i := range hcs {
		hc := &hcs[i]
		ns, name := hc.Namespace, hc.Name
		if !hc.DeletionTimestamp.IsZero() {
			ch <- prometheus.MustNewConstMetric(deletionDesc, prometheus.GaugeValue, now.Sub(hc.DeletionTimestamp.Time).Seconds(), ns, name)
		}
		var history []configv1.UpdateHistory
		if hc.Status.Version != nil {
			history = hc.Status.Version.History
		}
		if len(history) == 0 {
			ch <- prometheus.MustNewConstMetric(initialRolloutDesc, prometheus.GaugeValue, now.Sub(hc.CreationTimestamp.Time).Seconds(), ns, name)
			continue
		}
		first := history[len(history)-1]
		ch <- prometheus.MustNewConstMetric(initialRolloutDesc, prometheus.GaugeValue, ended(first, now).Sub(hc.CreationTimestamp.Time).Seconds(), ns, name)
		if len(history) > 1 {
			latest := history[0]
			ch <- prometheus.MustNewConstMetric(upgradeDesc, prometheus.GaugeValue, ended(latest, now).Sub(latest.StartedTime.Time).Seconds(), ns, name, latest.Version)
		}
	}
}

// ended is when a rollout completed, or now while it runs.
func ended(h configv1.UpdateHistory, now time.Time) time.Time {
	if h.State == configv1.CompletedUpdate && h.CompletionTime != nil {
		return h.CompletionTime.Time
	}
	return now
}
