package leaderelection

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/utils/ptr"
)

func TestMetrics(t *testing.T) {
	api, clk, a, _ := leader(t)
	b := start(t, api, clk, "b", false)
	b.settle(t)
	clk.Step(10 * time.Second)
	renewed := float64(clk.Now().Add(-10 * time.Second).Unix())

	leader := `
# HELP hypershift_leader_election_held_lease_remaining_seconds While this replica leads: seconds remaining until followers may take the Lease if it renews no more.
# TYPE hypershift_leader_election_held_lease_remaining_seconds gauge
hypershift_leader_election_held_lease_remaining_seconds{lease="ns/lease"} 50
# HELP hypershift_leader_election_is_leader 1 while this replica holds the Lease and runs its leader-only work, 0 otherwise.
# TYPE hypershift_leader_election_is_leader gauge
hypershift_leader_election_is_leader{lease="ns/lease"} 1
# HELP leader_election_master_status Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease. Please make sure to group by name.
# TYPE leader_election_master_status gauge
leader_election_master_status{name="ns/lease"} 1
# HELP hypershift_leader_election_last_renew_timestamp_seconds When this replica's last successful acquisition or renewal of the Lease started (Unix seconds); absent before the first.
# TYPE hypershift_leader_election_last_renew_timestamp_seconds gauge
hypershift_leader_election_last_renew_timestamp_seconds{lease="ns/lease"} ` + ftoa(renewed) + `
# HELP hypershift_leader_election_observed_holder 1 for the holder this replica last saw in the Lease (holder "" when released or missing).
# TYPE hypershift_leader_election_observed_holder gauge
hypershift_leader_election_observed_holder{holder="a",lease="ns/lease"} 1
# HELP hypershift_leader_election_transitions_total Changes of the Lease's holder from one candidate to another that this replica witnessed: not the holder it first saw, not a release, not a first acquisition of a Lease nobody held.
# TYPE hypershift_leader_election_transitions_total counter
hypershift_leader_election_transitions_total{lease="ns/lease"} 0
`
	if err := testutil.CollectAndCompare(a.e, strings.NewReader(leader)); err != nil {
		t.Errorf("leader: %v", err)
	}
	follower := `
# HELP hypershift_leader_election_is_leader 1 while this replica holds the Lease and runs its leader-only work, 0 otherwise.
# TYPE hypershift_leader_election_is_leader gauge
hypershift_leader_election_is_leader{lease="ns/lease"} 0
# HELP leader_election_master_status Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease. Please make sure to group by name.
# TYPE leader_election_master_status gauge
leader_election_master_status{name="ns/lease"} 0
# HELP hypershift_leader_election_observed_holder 1 for the holder this replica last saw in the Lease (holder "" when released or missing).
# TYPE hypershift_leader_election_observed_holder gauge
hypershift_leader_election_observed_holder{holder="a",lease="ns/lease"} 1
# HELP hypershift_leader_election_transitions_total Changes of the Lease's holder from one candidate to another that this replica witnessed: not the holder it first saw, not a release, not a first acquisition of a Lease nobody held.
# TYPE hypershift_leader_election_transitions_total counter
hypershift_leader_election_transitions_total{lease="ns/lease"} 0
`
	if err := testutil.CollectAndCompare(b.e, strings.NewReader(follower)); err != nil {
		t.Errorf("follower: %v", err)
	}
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// TestTransitionsCountHolderChanges: the transitions counter and the
// Lease's leaseTransitions count a holder replaced by another, not the
// first holder of a Lease created empty (as the hypershift-operator
// creates the CPO's), not a release.
func TestTransitionsCountHolderChanges(t *testing.T) {
	api, clk := newFakeAPI(), newClock()
	api.write(func(*coordinationv1.Lease) {}) // created empty, never held
	a := start(t, api, clk, "a", false)
	a.awaitLead(t)
	a.settle(t)
	b := start(t, api, clk, "b", false)
	b.settle(t)
	if got := api.current().Spec.LeaseTransitions; ptr.Deref(got, 0) != 0 {
		t.Fatalf("leaseTransitions = %d after the first holding of an empty Lease, want 0", ptr.Deref(got, 0))
	}
	if a.e.Status().Transitions != 0 || b.e.Status().Transitions != 0 {
		t.Fatalf("transitions a=%d b=%d after the first holding, want 0", a.e.Status().Transitions, b.e.Status().Transitions)
	}
	a.cancel() // releases; b takes over at once
	b.awaitLead(t)
	b.settle(t)
	if got := api.current().Spec.LeaseTransitions; ptr.Deref(got, 0) != 1 {
		t.Errorf("leaseTransitions = %d after a handover, want 1", ptr.Deref(got, 0))
	}
	if got := b.e.Status().Transitions; got != 1 {
		t.Errorf("b witnessed %d transitions of a -> (released) -> b, want 1", got)
	}
}
