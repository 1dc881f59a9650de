package leaderelection

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestMetrics(t *testing.T) {
	api, clk, a, _ := leader(t)
	b := start(t, api, clk, "b", false)
	b.settle(t)
	clk.Step(10 * time.Second)
	renewed := float64(clk.Now().Add(-10 * time.Second).Unix())

	leader := `
# HELP hypershift_leader_election_held_lease_expiry_seconds While this replica leads: seconds until followers may take the Lease if it renews no more.
# TYPE hypershift_leader_election_held_lease_expiry_seconds gauge
hypershift_leader_election_held_lease_expiry_seconds{lease="ns/lease"} 50
# HELP hypershift_leader_election_is_leader 1 while this replica holds the Lease and runs its leader-only work, 0 otherwise.
# TYPE hypershift_leader_election_is_leader gauge
hypershift_leader_election_is_leader{lease="ns/lease"} 1
# HELP hypershift_leader_election_last_renew_timestamp_seconds When this replica's last successful acquisition or renewal of the Lease started (Unix seconds); absent before the first.
# TYPE hypershift_leader_election_last_renew_timestamp_seconds gauge
hypershift_leader_election_last_renew_timestamp_seconds{lease="ns/lease"} ` + ftoa(renewed) + `
# HELP hypershift_leader_election_observed_holder 1 for the holder this replica last saw in the Lease (holder "" when released or missing).
# TYPE hypershift_leader_election_observed_holder gauge
hypershift_leader_election_observed_holder{holder="a",lease="ns/lease"} 1
# HELP hypershift_leader_election_transitions_total Changes of the Lease's holder this replica has seen.
# TYPE hypershift_leader_election_transitions_total counter
hypershift_leader_election_transitions_total{lease="ns/lease"} 1
`
	if err := testutil.CollectAndCompare(a.e, strings.NewReader(leader)); err != nil {
		t.Errorf("leader: %v", err)
	}
	follower := `
# HELP hypershift_leader_election_is_leader 1 while this replica holds the Lease and runs its leader-only work, 0 otherwise.
# TYPE hypershift_leader_election_is_leader gauge
hypershift_leader_election_is_leader{lease="ns/lease"} 0
# HELP hypershift_leader_election_observed_holder 1 for the holder this replica last saw in the Lease (holder "" when released or missing).
# TYPE hypershift_leader_election_observed_holder gauge
hypershift_leader_election_observed_holder{holder="a",lease="ns/lease"} 1
# HELP hypershift_leader_election_transitions_total Changes of the Lease's holder this replica has seen.
# TYPE hypershift_leader_election_transitions_total counter
hypershift_leader_election_transitions_total{lease="ns/lease"} 1
`
	if err := testutil.CollectAndCompare(b.e, strings.NewReader(follower)); err != nil {
		t.Errorf("follower: %v", err)
	}
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
