package hostedcluster

import (
	"context"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
)

// TestDurationMetrics checks each duration, finished and under way,
// against timestamps a minute apart.
func TestDurationMetrics(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	at := func(minutes int) metav1.Time { return metav1.NewTime(t0.Add(time.Duration(minutes) * time.Minute)) }
	ptr := func(t metav1.Time) *metav1.Time { return &t }
	hc := func(name string, created int, history ...configv1.UpdateHistory) hyperv1.HostedCluster {
		c := hyperv1.HostedCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: name, CreationTimestamp: at(created)}}
		if history != nil {
			c.Status.Version = &hyperv1.ClusterVersionStatus{History: history}
		}
		return c
	}
	deleting := hc("deleting", 0, configv1.UpdateHistory{State: configv1.CompletedUpdate, Version: "4.17.0", StartedTime: at(0), CompletionTime: ptr(at(3))})
	deleting.DeletionTimestamp = ptr(at(8))
	clusters := []hyperv1.HostedCluster{
		hc("new", 9), // no history yet: 1m so far
		hc("rolling-out", 5, configv1.UpdateHistory{State: configv1.PartialUpdate, Version: "4.17.0", StartedTime: at(5)}), // 5m so far
		hc("upgraded", 0,
			configv1.UpdateHistory{State: configv1.CompletedUpdate, Version: "4.18.0", StartedTime: at(4), CompletionTime: ptr(at(6))},
			configv1.UpdateHistory{State: configv1.CompletedUpdate, Version: "4.17.0", StartedTime: at(0), CompletionTime: ptr(at(2))}),
		hc("upgrading", 0,
			configv1.UpdateHistory{State: configv1.PartialUpdate, Version: "4.18.0", StartedTime: at(7)},
			configv1.UpdateHistory{State: configv1.CompletedUpdate, Version: "4.17.0", StartedTime: at(0), CompletionTime: ptr(at(1))}),
		deleting,
	}
	leading := false
	c := &durationCollector{ctx: t.Context(), clock: clocktesting.NewFakePassiveClock(t0.Add(10 * time.Minute)), active: func() bool { return leading },
		list: func(context.Context) ([]hyperv1.HostedCluster, error) { return clusters, nil }}
	want := `
# HELP hypershift_cluster_deletion_duration_seconds Seconds since the HostedCluster was deleted, while its teardown runs.
# TYPE hypershift_cluster_deletion_duration_seconds gauge
hypershift_cluster_deletion_duration_seconds{name="deleting",namespace="clusters"} 120
# HELP hypershift_cluster_initial_rollout_duration_seconds Seconds from the HostedCluster's creation to the end of its first rollout (its oldest release Completed); while that rollout runs, the seconds so far.
# TYPE hypershift_cluster_initial_rollout_duration_seconds gauge
hypershift_cluster_initial_rollout_duration_seconds{name="deleting",namespace="clusters"} 180
hypershift_cluster_initial_rollout_duration_seconds{name="new",namespace="clusters"} 60
hypershift_cluster_initial_rollout_duration_seconds{name="rolling-out",namespace="clusters"} 300
hypershift_cluster_initial_rollout_duration_seconds{name="upgraded",namespace="clusters"} 120
hypershift_cluster_initial_rollout_duration_seconds{name="upgrading",namespace="clusters"} 60
# HELP hypershift_cluster_upgrade_duration_seconds Seconds the HostedCluster's latest upgrade took, from its start to its completion; while it runs, the seconds so far. Absent before the first upgrade.
# TYPE hypershift_cluster_upgrade_duration_seconds gauge
hypershift_cluster_upgrade_duration_seconds{name="upgraded",namespace="clusters",version="4.18.0"} 120
hypershift_cluster_upgrade_duration_seconds{name="upgrading",namespace="clusters",version="4.18.0"} 180
`
	if n := promtestutil.CollectAndCount(c); n != 0 {
		t.Fatalf("a standby reports %d series, want none", n)
	}
	leading = true
	if err := promtestutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
}
