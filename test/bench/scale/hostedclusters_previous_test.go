package main

import (
	"strings"
	"testing"
	"time"

	"github.com/hypershift-le/hypershift/test/bench/report"
)

// TestHeadlineFiguresAreFound: every headline figure is found in the
// section on record, so that the next run can set itself beside it; a
// change of the report's rows that loses one fails here.
func TestHeadlineFiguresAreFound(t *testing.T) {
	path, err := report.File()
	if err != nil {
		t.Fatal(err)
	}
	section, err := report.ReadSection(path, "scale-hostedclusters")
	if err != nil {
		t.Fatal(err)
	}
	if section == "" {
		t.Skip("no scale-hostedclusters section on record in docs/benchmarks.md")
	}
	figures := figuresOf(section)
	for _, h := range headline {
		if _, ok := figures[h.name]; !ok {
			t.Errorf("%q is not found in the section on record", h.name)
		}
	}
	table := comparison(section, section)
	if strings.Count(table, "| 1.00 |") != len(headline) {
		t.Errorf("a run set beside itself should give a ratio of 1.00 on every row:\n%s", table)
	}
}

// TestFailoverFiguresAreFound: the failover step's rows give its headline
// figures back.
func TestFailoverFiguresAreFound(t *testing.T) {
	killed := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	res := &failoverResult{killed: killed, led: killed.Add(1500 * time.Millisecond), passDone: killed.Add(4 * time.Second), reconciles: 1000,
		requests: tally{total: 2, calls: map[string]int{"get hostedclusters": 1, "patch leases": 1}}, writes: []string{"a write", "another"}}
	figures := figuresOf(res.markdown(1000, "lease-duration 1m0s"))
	for name, want := range map[string]float64{
		"failover: the standby leads, s after the kill":   1.5,
		"failover: its first pass done, s after it leads": 2.5,
		"failover: writes in that pass":                   2,
	} {
		if got, ok := figures[name]; !ok || got != want {
			t.Errorf("%s: %v (found: %t), want %v", name, got, ok, want)
		}
	}
}
