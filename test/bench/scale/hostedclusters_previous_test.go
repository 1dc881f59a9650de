package main

import (
	"strings"
	"testing"

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
