package leaderelection

import (
	"github.com/prometheus/client_golang/prometheus"
)

var (
	leaderDesc = prometheus.NewDesc("hypershift_leader_election_is_leader",
		"1 while this replica holds the Lease and runs its leader-only work, 0 otherwise.", []string{"lease"}, nil)
	lastRenewDesc = prometheus.NewDesc("hypershift_leader_election_last_renew_timestamp_seconds",
		"When this replica's last successful acquisition or renewal of the Lease started (Unix seconds); absent before the first.", []string{"lease"}, nil)
	remainingDesc = prometheus.NewDesc("hypershift_leader_election_held_lease_remaining_seconds",
		"While this replica leads: seconds remaining until followers may take the Lease if it renews no more.", []string{"lease"}, nil)
	transitionsDesc = prometheus.NewDesc("hypershift_leader_election_transitions_total",
		"Changes of the Lease's holder from one candidate to another that this replica witnessed: not the holder it first saw, not a release, not a first acquisition of a Lease nobody held.", []string{"lease"}, nil)
	// masterStatusDesc is client-go's leader_election_master_status, for
	// the dashboards and alerts written for it; its help is
	// controller-runtime's word for word, as the registry requires of a
	// name registered before (see registerMetrics).
	masterStatusDesc = prometheus.NewDesc("leader_election_master_status",
		"Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease. Please make sure to group by name.", []string{"name"}, nil)
	observedHolderDesc = prometheus.NewDesc("hypershift_leader_election_observed_holder",
		"1 for the holder this replica last saw in the Lease (holder \"\" when released or missing).", []string{"lease", "holder"}, nil)
)

// Describe implements prometheus.Collector: an Elector reports its state at
// each scrape, so that seconds-until-expiry is current.
func (e *Elector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{leaderDesc, masterStatusDesc, lastRenewDesc, remainingDesc, transitionsDesc, observedHolderDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (e *Elector) Collect(ch chan<- prometheus.Metric) {
	s := e.Status()
	leading := 0.0
	if s.Leading {
		leading = 1
	}
	ch <- prometheus.MustNewConstMetric(leaderDesc, prometheus.GaugeValue, leading, e.lease)
	ch <- prometheus.MustNewConstMetric(masterStatusDesc, prometheus.GaugeValue, leading, e.lease)
	if !s.LastRenew.IsZero() {
		ch <- prometheus.MustNewConstMetric(lastRenewDesc, prometheus.GaugeValue, float64(s.LastRenew.UnixNano())/1e9, e.lease)
	}
	if s.Leading {
		left := s.LastRenew.Add(e.timings.LeaseDuration).Sub(e.clock.Now()).Seconds()
		ch <- prometheus.MustNewConstMetric(remainingDesc, prometheus.GaugeValue, left, e.lease)
	}
	ch <- prometheus.MustNewConstMetric(transitionsDesc, prometheus.CounterValue, float64(s.Transitions), e.lease)
	ch <- prometheus.MustNewConstMetric(observedHolderDesc, prometheus.GaugeValue, 1, e.lease, s.Holder)
}
