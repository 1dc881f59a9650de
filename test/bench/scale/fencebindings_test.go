package main

import (
	"strings"
	"testing"
	"time"
)

func TestFenceBindingsMarkdown(t *testing.T) {
	rows := []fbRow{
		{namespaces: 1000, bindings: 0, design: "none", writes: 100, cpu: 100 * time.Millisecond, window: time.Second},
		{namespaces: 1000, bindings: 1, design: "shared", writes: 100, cpu: 200 * time.Millisecond, window: time.Second},
		{namespaces: 1000, bindings: 1000, design: "per namespace", writes: 100, cpu: 200*time.Millisecond + 999*100*time.Microsecond, window: time.Second},
		{namespaces: 1000, bindings: 1000, design: "per namespace", elsewhere: true, writes: 100, cpu: 110 * time.Millisecond, window: time.Second},
	}
	md := fbMarkdown(rows)
	for _, want := range []string{
		"| 1,000 | 0 | none | control-plane namespaces | 100 | 1.00 ms | 1.00 |",
		"| 1,000 | 1 | shared | control-plane namespaces | 100 | 2.00 ms | 2.00 |",
		"| 1,000 | 1,000 | per namespace | control-plane namespaces | 100 | 3.00 ms | 3.00 |",
		"| 1,000 | 1,000 | per namespace | other namespaces | 100 | 1.10 ms | 1.10 |",
		"costs 1.50 times the shared binding per write: 1.0 µs more per binding",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

func TestFenceBindingsSizes(t *testing.T) {
	if got, err := fbSizes("1000, 10000"); err != nil || len(got) != 2 || got[1] != 10000 {
		t.Errorf("fbSizes(1000, 10000) = %v, %v", got, err)
	}
	for _, bad := range []string{"", "0", "10000,1000", "x"} {
		if _, err := fbSizes(bad); err == nil {
			t.Errorf("fbSizes(%q) took it", bad)
		}
	}
}
