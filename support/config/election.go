// Package config holds configuration shared by the project's binaries: the
// leader-election timings, their component-base flag names and the rules
// that keep them safe, and the log levels the operators take.
package config

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
)

// Timings holds the timings of a Lease-based election: the three of
// component-base's LeaderElectionConfiguration, and a renew interval.
type Timings struct {
	// LeaseDuration is how long a follower waits, from the last change of
	// the Lease it saw, before it may take the Lease. Whole seconds: the
	// Lease stores it as spec.leaseDurationSeconds.
	LeaseDuration time.Duration
	// RenewDeadline is how long, from the start of its last successful
	// renewal, the leader keeps leading while it cannot renew.
	RenewDeadline time.Duration
	// RetryPeriod is how long a candidate or leader waits after a failed
	// request before it tries again.
	RetryPeriod time.Duration
	// RenewInterval is how long after a successful renewal the leader
	// renews again; 0 means two thirds of the renew deadline.
	RenewInterval time.Duration
}

// DefaultControlPlaneOperatorTimings are the control-plane-operator's
// timings. A follower takes over a crashed leader after 60s, as with
// HyperShift's 60s/40s/15s, but the leader writes the Lease twice a minute
// (the renew interval defaults to two thirds of 45s: 30s) instead of four
// times, followers watch instead of reading, and a failed renewal is
// retried every 2s until 45s after the last good one. The renew interval is
// left to its derived default so that whoever sets only the three
// component-base flags gets a consistent interval.
var DefaultControlPlaneOperatorTimings = Timings{
	LeaseDuration: 60 * time.Second,
	RenewDeadline: 45 * time.Second,
	RetryPeriod:   2 * time.Second,
}

// ClusterAPITimings are the timings of the cluster-api manager of a
// HostedCluster of platform Pod. Its election is client-go's through
// controller-runtime, whose leader renews every retry period (it has no
// renew interval): 20s keeps it to three Lease writes a minute, as many as
// HyperShift's 26s for the same manager, and a standby, were there one,
// would lead within the 60s lease, as the control-plane-operator's does.
var ClusterAPITimings = Timings{
	LeaseDuration: 60 * time.Second,
	RenewDeadline: 40 * time.Second,
	RetryPeriod:   20 * time.Second,
	// What client-go does: it renews every retry period.
	RenewInterval: 20 * time.Second,
}

// DefaultHypershiftOperatorTimings are the hypershift-operator's timings.
var DefaultHypershiftOperatorTimings = DefaultControlPlaneOperatorTimings

// SkewMargin is how much longer than the renew deadline the lease duration
// must be: max(1s, LeaseDuration/10). It absorbs the difference between the
// leader's and a follower's clocks over one lease duration, the delay
// between the leader's deadline and its controllers stopping, and a
// follower learning of a renewal before the leader's request returns.
func (le Timings) SkewMargin() time.Duration {
	return max(time.Second, le.LeaseDuration/10)
}

// Renew is the renew interval in effect: RenewInterval, or two thirds of
// the renew deadline when it is 0.
func (le Timings) Renew() time.Duration {
	if le.RenewInterval > 0 {
		return le.RenewInterval
	}
	return le.RenewDeadline * 2 / 3
}

// retryJitter is client-go's factor for a jittered retry period; the rule
// RenewDeadline > 1.2 RetryPeriod of component-base is kept for whoever
// reads these flags with client-go's meaning.
const retryJitter = 1.2

// Validate enforces the rules that keep one holder:
//
//	RenewDeadline + SkewMargin <= LeaseDuration
//	Renew + RetryPeriod <= RenewDeadline, and RenewDeadline > 1.2 RetryPeriod
//
// The first makes a leader that cannot renew stop leading before any
// follower may take the Lease; the second gives a failed renewal at least
// one retry before the deadline.
func (le Timings) Validate() error {
	switch {
	case le.RetryPeriod <= 0:
		return fmt.Errorf("leader election retry period must be positive, got %s", le.RetryPeriod)
	case le.RenewInterval < 0:
		return fmt.Errorf("leader election renew interval must not be negative (0 means two thirds of the renew deadline), got %s", le.RenewInterval)
	case le.LeaseDuration < time.Second || le.LeaseDuration%time.Second != 0:
		return fmt.Errorf("leader election lease duration must be a whole number of seconds (the Lease stores seconds), got %s", le.LeaseDuration)
	case le.RenewDeadline+le.SkewMargin() > le.LeaseDuration:
		return fmt.Errorf("leader election lease duration (%s) must exceed the renew deadline (%s) by at least %s (max(1s, lease duration/10)), so that a leader that cannot renew stops before a follower may take over",
			le.LeaseDuration, le.RenewDeadline, le.SkewMargin())
	case float64(le.RenewDeadline) <= retryJitter*float64(le.RetryPeriod):
		return fmt.Errorf("leader election renew deadline (%s) must be greater than %.1f times the retry period (%s)", le.RenewDeadline, retryJitter, le.RetryPeriod)
	case le.Renew()+le.RetryPeriod > le.RenewDeadline:
		return fmt.Errorf("leader election renew interval (%s) plus the retry period (%s) must not exceed the renew deadline (%s), so that a failed renewal is retried before the leader steps down",
			le.Renew(), le.RetryPeriod, le.RenewDeadline)
	}
	return nil
}

// RequestTimeout bounds each request of the election: half the time
// between the renewal and the deadline, and at least one retry period, so
// that one hung request leaves room for another before the deadline.
// A leader also never waits for a request past its deadline.
func (le Timings) RequestTimeout() time.Duration {
	return max(le.RetryPeriod, (le.RenewDeadline-le.Renew())/2)
}

// AddFlags registers the component-base timing flags and
// leader-elect-renew-interval, with prefix before "leader-elect-" (e.g.
// "cpo-" gives --cpo-leader-elect-lease-duration), using le's values as
// defaults.
func (le *Timings) AddFlags(fs *pflag.FlagSet, prefix, who string) {
	fs.DurationVar(&le.LeaseDuration, prefix+"leader-elect-lease-duration", le.LeaseDuration,
		"How long "+who+" followers wait, after the last change of the Lease they saw, before taking it. Whole seconds.")
	fs.DurationVar(&le.RenewDeadline, prefix+"leader-elect-renew-deadline", le.RenewDeadline,
		"How long after its last successful renewal the "+who+" leader keeps leading while it cannot renew. Must be below the lease duration by max(1s, lease duration/10).")
	fs.DurationVar(&le.RetryPeriod, prefix+"leader-elect-retry-period", le.RetryPeriod,
		"How long "+who+" candidates and the leader wait after a failed request before retrying.")
	fs.DurationVar(&le.RenewInterval, prefix+"leader-elect-renew-interval", le.RenewInterval,
		"How long after a successful renewal the "+who+" leader renews again (0: two thirds of the renew deadline). Plus the retry period, it must not exceed the renew deadline.")
}

// Args renders le as the flags AddFlags registers, with prefix.
func (le Timings) Args(prefix string) []string {
	return []string{
		"--" + prefix + "leader-elect-lease-duration=" + le.LeaseDuration.String(),
		"--" + prefix + "leader-elect-renew-deadline=" + le.RenewDeadline.String(),
		"--" + prefix + "leader-elect-retry-period=" + le.RetryPeriod.String(),
		"--" + prefix + "leader-elect-renew-interval=" + le.Renew().String(),
	}
}
