package operator

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestMaxConcurrentReconciles: the worker count defaults to 25, takes the
// flag's value, and is refused, in the flag's words, outside 1 to 1000.
func TestMaxConcurrentReconciles(t *testing.T) {
	tests := []struct {
		args    []string
		want    int
		wantErr string
	}{
		{args: nil, want: 25},
		{args: []string{"--max-concurrent-reconciles=10"}, want: 10},
		{args: []string{"--max-concurrent-reconciles=1"}, want: 1},
		{args: []string{"--max-concurrent-reconciles=0"}, wantErr: "--max-concurrent-reconciles must be from 1 to 1000, got 0"},
		{args: []string{"--max-concurrent-reconciles=1001"}, wantErr: "--max-concurrent-reconciles must be from 1 to 1000, got 1001"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			o := DefaultOptions()
			fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
			o.AddFlags(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			err := o.Validate()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Validate() = %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.MaxConcurrentReconciles != tt.want {
				t.Fatalf("MaxConcurrentReconciles = %d, want %d", o.MaxConcurrentReconciles, tt.want)
			}
		})
	}
}

// TestShards: one shard by default; the count is refused, in the flag's
// words, outside 1 to 64, and above 1 without leader election.
func TestShards(t *testing.T) {
	tests := []struct {
		args    []string
		want    int
		wantErr string
	}{
		{args: nil, want: 1},
		{args: []string{"--shards=4"}, want: 4},
		{args: []string{"--shards=0"}, wantErr: "--shards must be from 1 to 64, got 0"},
		{args: []string{"--shards=65"}, wantErr: "--shards must be from 1 to 64, got 65"},
		{args: []string{"--shards=4", "--leader-elect=false"}, wantErr: "--shards=4 needs --leader-elect: a shard is owned through its Lease"},
		{args: []string{"--shards=1", "--leader-elect=false"}, want: 1},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			o := DefaultOptions()
			fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
			o.AddFlags(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			err := o.Validate()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Validate() = %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.Shards != tt.want {
				t.Fatalf("Shards = %d, want %d", o.Shards, tt.want)
			}
		})
	}
}
