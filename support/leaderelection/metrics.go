package leaderelection

import (
	"github.com/prometheus/client_golang/prometheus"
)

var (
	leaderDesc = prometheus.NewDesc("hypershift_leader_election_is_leader",
		"1 while this replica holds the Lease and runs its leader-only work, 0 otherwise.", []string{"lease"}, nil)
	lastRenewDesc = prometheus.NewDesc("hypershift_leader_election_last_renew_timestamp_seconds",
		"When this replica's last successful acquisition or renewal of the Lease started (Unix seconds); absent before the first.", []string{"lease"}, nil)
	expiryDesc = prometheus.NewDesc("hypershift_leader_election_held_lease_expiry_seconds",
		"While this replica leads: seconds until followers may take the Lease if it renews no more.", []string{"lease"}, nil)
	transitionsDesc = prometheus.NewDesc("hypershift_leader_election_transitions_total",
		"Changes of the Lease's holder this replica has seen.", []string{"lease"}, nil)
	observedHolderDesc = prometheus.NewDesc("hypershift_leader_election_observed_holder",
		"1 for the holder this replica last saw in the Lease (holder \"\" when released or missing).", []string{"lease", "holder"}, nil)
)

// Describe implements prometheus.Collector: an Elector reports its state at
// each scrape, so that seconds-until-expiry is current.
func (e *Elector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{leaderDesc, lastRenewDesc, expiryDesc, transitionsDesc, observedHolderDesc} {
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
	if !s.LastRenew.IsZero() {
		ch <- prometheus.MustNewConstMetric(lastRenewDesc, prometheus.GaugeValue, float64(s.LastRenew.UnixNano())/1e9, e.lease)
	}
	if s.Leading {
		left := s.LastRenew.Add(e.timings.LeaseDuration).Sub(e.clock.Now()).Seconds()
		ch <- prometheus.MustNewConstMetric(expiryDesc, prometheus.GaugeValue, left, e.lease)
	}
	ch <- prometheus.MustNewConstMetric(transitionsDesc, prometheus.CounterValue, float64(s.Transitions), e.lease)
	ch <- prometheus.MustNewConstMetric(observedHolderDesc, prometheus.GaugeValue, 1, e.lease, s.Holder)
}
