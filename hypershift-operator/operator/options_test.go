package operator

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// flagCase is one command line, and either the value it must give or the
// error Validate must return.
type flagCase struct {
	args    []string
	want    int
	wantErr string
}

// checkFlags parses each case's arguments over the defaults, validates, and
// compares got(options) with the case's value or the error with its text.
func checkFlags(t *testing.T, tests []flagCase, name string, got func(Options) int) {
	t.Helper()
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
			if v := got(o); v != tt.want {
				t.Fatalf("%s = %d, want %d", name, v, tt.want)
			}
		})
	}
}

// TestMaxConcurrentReconciles: the worker count defaults to 25, takes the
// flag's value, and is refused, in the flag's words, outside 1 to 1000.
func TestMaxConcurrentReconciles(t *testing.T) {
	checkFlags(t, []flagCase{
		{args: nil, want: 25},
		{args: []string{"--max-concurrent-reconciles=10"}, want: 10},
		{args: []string{"--max-concurrent-reconciles=1"}, want: 1},
		{args: []string{"--max-concurrent-reconciles=0"}, wantErr: "--max-concurrent-reconciles must be from 1 to 1000, got 0"},
		{args: []string{"--max-concurrent-reconciles=1001"}, wantErr: "--max-concurrent-reconciles must be from 1 to 1000, got 1001"},
	}, "MaxConcurrentReconciles", func(o Options) int { return o.MaxConcurrentReconciles })
}

// TestShards: one shard by default; the count is refused, in the flag's
// words, outside 1 to 64, and above 1 without leader election.
func TestShards(t *testing.T) {
	checkFlags(t, []flagCase{
		{args: nil, want: 1},
		{args: []string{"--shards=4"}, want: 4},
		{args: []string{"--shards=0"}, wantErr: "--shards must be from 1 to 64, got 0"},
		{args: []string{"--shards=65"}, wantErr: "--shards must be from 1 to 64, got 65"},
		{args: []string{"--shards=4", "--leader-elect=false"}, wantErr: "--shards=4 needs --leader-elect: a shard is owned through its Lease"},
		{args: []string{"--shards=1", "--leader-elect=false"}, want: 1},
	}, "Shards", func(o Options) int { return o.Shards })
}
