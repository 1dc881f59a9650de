package config

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestLeaderElectionValidate(t *testing.T) {
	s := time.Second
	tests := []struct {
		name    string
		le      Timings
		wantErr string
	}{
		{name: "when the defaults are used, they are valid", le: DefaultControlPlaneOperatorTimings},
		{name: "when client-go's 15/10/2 are used with the derived renew interval, they are valid", le: Timings{LeaseDuration: 15 * s, RenewDeadline: 10 * s, RetryPeriod: 2 * s}},
		{name: "when the tests' 4/3/1 are used with the derived renew interval, they are valid", le: Timings{LeaseDuration: 4 * s, RenewDeadline: 3 * s, RetryPeriod: s}},
		{name: "when the lease duration equals the renew deadline, it is refused", le: Timings{LeaseDuration: 40 * s, RenewDeadline: 40 * s, RetryPeriod: 2 * s}, wantErr: "lease duration (40s) must exceed the renew deadline (40s) by at least 4s"},
		{name: "when the margin is one millisecond short, it is refused", le: Timings{LeaseDuration: 60 * s, RenewDeadline: 54*s + time.Millisecond, RetryPeriod: 2 * s}, wantErr: "by at least 6s"},
		{name: "when the margin is exactly max(1s, LD/10), it is valid", le: Timings{LeaseDuration: 60 * s, RenewDeadline: 54 * s, RetryPeriod: 2 * s, RenewInterval: 30 * s}},
		{name: "when a short lease leaves less than 1s of margin, it is refused", le: Timings{LeaseDuration: 4 * s, RenewDeadline: 3500 * time.Millisecond, RetryPeriod: 500 * time.Millisecond}, wantErr: "by at least 1s"},
		{name: "when the lease duration is not whole seconds, it is refused", le: Timings{LeaseDuration: 4500 * time.Millisecond, RenewDeadline: 3 * s, RetryPeriod: s}, wantErr: "whole number of seconds"},
		{name: "when renew interval plus retry period exceeds the deadline, it is refused", le: Timings{LeaseDuration: 60 * s, RenewDeadline: 45 * s, RetryPeriod: 2 * s, RenewInterval: 44 * s}, wantErr: "renew interval (44s) plus the retry period (2s) must not exceed the renew deadline (45s)"},
		{name: "when the derived renew interval leaves no retry (HyperShift's 60/40/15), it is refused", le: Timings{LeaseDuration: 60 * s, RenewDeadline: 40 * s, RetryPeriod: 15 * s}, wantErr: "plus the retry period (15s) must not exceed"},
		{name: "when the renew deadline is exactly 1.2 retry periods, it is refused", le: Timings{LeaseDuration: 60 * s, RenewDeadline: 12 * s, RetryPeriod: 10 * s, RenewInterval: time.Second}, wantErr: "renew deadline (12s) must be greater than 1.2 times the retry period (10s)"},
		{name: "when the renew interval is negative, it is refused", le: Timings{LeaseDuration: 60 * s, RenewDeadline: 45 * s, RetryPeriod: 2 * s, RenewInterval: -s}, wantErr: "must not be negative"},
		{name: "when the retry period is zero, it is refused", le: Timings{LeaseDuration: 60 * s, RenewDeadline: 40 * s}, wantErr: "retry period must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.le.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("want valid, got %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("want an error containing %q, got %v", tt.wantErr, err)
			}
		})
	}
}

func TestLeaderElectionDefaultsMeetTheGoal(t *testing.T) {
	le := DefaultControlPlaneOperatorTimings
	if writesPerMinute := float64(time.Minute) / float64(le.Renew()); writesPerMinute > 2 {
		t.Errorf("the leader renews %.1f times a minute, want at most 2", writesPerMinute)
	}
	if le.LeaseDuration != 60*time.Second {
		t.Errorf("lease duration %s, want 60s", le.LeaseDuration)
	}
}

func TestLeaderElectionRenewAndRequestTimeout(t *testing.T) {
	s := time.Second
	if got := (Timings{RenewDeadline: 45 * s}).Renew(); got != 30*s {
		t.Errorf("derived renew interval %s, want 30s", got)
	}
	if got := (Timings{RenewDeadline: 45 * s, RenewInterval: 20 * s}).Renew(); got != 20*s {
		t.Errorf("renew interval %s, want the one set, 20s", got)
	}
	for _, le := range []Timings{DefaultControlPlaneOperatorTimings, {LeaseDuration: 4 * s, RenewDeadline: 3 * s, RetryPeriod: s}} {
		if got := le.RequestTimeout(); got < le.RetryPeriod || got > le.RenewDeadline-le.Renew() {
			t.Errorf("%+v: request timeout %s must be at least the retry period and fit between the renewal and the deadline", le, got)
		}
	}
}

func TestLeaderElectionFlags(t *testing.T) {
	le := DefaultControlPlaneOperatorTimings
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	le.AddFlags(fs, "cpo-", "control-plane-operator")
	// Only the component-base three: the renew interval follows the deadline.
	if err := fs.Parse([]string{"--cpo-leader-elect-lease-duration=4s", "--cpo-leader-elect-renew-deadline=3s", "--cpo-leader-elect-retry-period=1s"}); err != nil {
		t.Fatal(err)
	}
	if err := le.Validate(); err != nil || le.Renew() != 2*time.Second {
		t.Fatalf("with the three component-base flags set: renew %s, %v", le.Renew(), err)
	}
	want := Timings{LeaseDuration: 30 * time.Second, RenewDeadline: 20 * time.Second, RetryPeriod: 5 * time.Second, RenewInterval: 10 * time.Second}
	if err := fs.Parse(want.Args("cpo-")); err != nil {
		t.Fatal(err)
	}
	if le != want {
		t.Fatalf("got %+v, want %+v", le, want)
	}
}

func TestClusterAPITimingsAreValid(t *testing.T) {
	if err := ClusterAPITimings.Validate(); err != nil {
		t.Fatal(err)
	}
	// client-go renews every retry period: three writes a minute at most.
	if perMinute := time.Minute / ClusterAPITimings.RetryPeriod; perMinute > 3 {
		t.Errorf("the cluster-api manager renews its Lease %d times a minute", perMinute)
	}
}
