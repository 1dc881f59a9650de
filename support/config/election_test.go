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
		le      LeaderElection
		wantErr string
	}{
		{name: "when the defaults are used, they are valid", le: DefaultControlPlaneOperatorElection},
		{name: "when client-go's 15/10/2 are used, they are valid", le: LeaderElection{15 * s, 10 * s, 2 * s}},
		{name: "when the lease duration equals the renew deadline, it is refused", le: LeaderElection{40 * s, 40 * s, 10 * s}, wantErr: "lease duration (40s) must be greater than the renew deadline (40s)"},
		{name: "when the renew deadline is exactly 1.2 retry periods, it is refused", le: LeaderElection{60 * s, 12 * s, 10 * s}, wantErr: "renew deadline (12s) must be greater than 1.2 times the retry period (10s)"},
		{name: "when the renew deadline is just above 1.2 retry periods, it is valid", le: LeaderElection{60 * s, 12*s + time.Millisecond, 10 * s}},
		{name: "when the retry period is zero, it is refused", le: LeaderElection{60 * s, 40 * s, 0}, wantErr: "retry period must be positive"},
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

func TestLeaderElectionRequestTimeout(t *testing.T) {
	le := DefaultControlPlaneOperatorElection
	if got := le.RequestTimeout(); got <= 0 || got >= le.RenewDeadline {
		t.Fatalf("request timeout %s must be positive and below the renew deadline %s", got, le.RenewDeadline)
	}
}

func TestLeaderElectionAddFlags(t *testing.T) {
	le := DefaultControlPlaneOperatorElection
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	le.AddFlags(fs, "cpo-", "control-plane-operator")
	if err := fs.Parse([]string{"--cpo-leader-elect-lease-duration=30s", "--cpo-leader-elect-renew-deadline=20s", "--cpo-leader-elect-retry-period=5s"}); err != nil {
		t.Fatal(err)
	}
	want := LeaderElection{30 * time.Second, 20 * time.Second, 5 * time.Second}
	if le != want {
		t.Fatalf("got %+v, want %+v", le, want)
	}
}
