// Package config holds configuration shared by the project's binaries: the
// leader-election timings, their component-base flag names and the rule that
// keeps them safe.
package config

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
)

// LeaderElection holds the timings of a Lease-based election, as in
// component-base's LeaderElectionConfiguration.
type LeaderElection struct {
	// LeaseDuration is how long a follower waits, from the last change it
	// saw, before it may take the Lease.
	LeaseDuration time.Duration
	// RenewDeadline is how long the leader keeps trying to renew before it
	// gives up leading.
	RenewDeadline time.Duration
	// RetryPeriod is how often candidates try to acquire, and the leader
	// to renew.
	RetryPeriod time.Duration
}

// DefaultControlPlaneOperatorElection are the control-plane-operator's
// timings: HyperShift's 60s/40s/15s, chosen for the API-server load of
// hundreds of hosted clusters (a leader renews 4 times a minute).
var DefaultControlPlaneOperatorElection = LeaderElection{
	LeaseDuration: 60 * time.Second,
	RenewDeadline: 40 * time.Second,
	RetryPeriod:   15 * time.Second,
}

// DefaultHypershiftOperatorElection are the hypershift-operator's timings.
var DefaultHypershiftOperatorElection = DefaultControlPlaneOperatorElection

// retryJitter is client-go's wait.JitterUntil factor for the retry period:
// a renew attempt may start up to 1.2 RetryPeriods after the last one.
const retryJitter = 1.2

// Validate checks LeaseDuration > RenewDeadline > 1.2 * RetryPeriod, the
// rule client-go's leader election relies on: a leader that cannot renew
// gives up before a follower may take the Lease, and it gets at least one
// jittered retry before its deadline.
func (le LeaderElection) Validate() error {
	switch {
	case le.RetryPeriod <= 0:
		return fmt.Errorf("leader election retry period must be positive, got %s", le.RetryPeriod)
	case le.LeaseDuration <= le.RenewDeadline:
		return fmt.Errorf("leader election lease duration (%s) must be greater than the renew deadline (%s)", le.LeaseDuration, le.RenewDeadline)
	case float64(le.RenewDeadline) <= retryJitter*float64(le.RetryPeriod):
		return fmt.Errorf("leader election renew deadline (%s) must be greater than %.1f times the retry period (%s)", le.RenewDeadline, retryJitter, le.RetryPeriod)
	}
	return nil
}

// RequestTimeout is the timeout for each request of the lock's client:
// below the renew deadline, so that one hung request cannot outlast it.
func (le LeaderElection) RequestTimeout() time.Duration {
	return le.RenewDeadline / 2
}

// AddFlags registers the component-base timing flags, with prefix before
// "leader-elect-" (e.g. "cpo-" gives --cpo-leader-elect-lease-duration),
// using le's values as defaults.
func (le *LeaderElection) AddFlags(fs *pflag.FlagSet, prefix, who string) {
	fs.DurationVar(&le.LeaseDuration, prefix+"leader-elect-lease-duration", le.LeaseDuration,
		"How long "+who+" followers wait, after the last change they saw, before taking the Lease.")
	fs.DurationVar(&le.RenewDeadline, prefix+"leader-elect-renew-deadline", le.RenewDeadline,
		"How long the "+who+" leader keeps trying to renew before it stops leading. Must be less than the lease duration.")
	fs.DurationVar(&le.RetryPeriod, prefix+"leader-elect-retry-period", le.RetryPeriod,
		"How often "+who+" candidates try to acquire and the leader renews. 1.2 times it must be less than the renew deadline.")
}
