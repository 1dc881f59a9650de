package main

import (
	"strings"
	"testing"
	"time"
)

// TestTimelineMarkdown orders steps by their median over the clusters,
// ties by name, and reports each step's median, fastest and slowest.
func TestTimelineMarkdown(t *testing.T) {
	got := timelineMarkdown([]timeline{
		{"etcd: pod Ready": 6 * time.Second, "b": time.Second, "a": time.Second, servedStep: 10 * time.Second},
		{"etcd: pod Ready": 8 * time.Second, "b": time.Second, "a": time.Second, servedStep: 12 * time.Second},
		{"etcd: pod Ready": 7 * time.Second, "b": time.Second, "a": time.Second},
	})
	want := []string{
		"| a | 1.00 s | 1.00 s | 1.00 s | 3 |",
		"| b | 1.00 s | 1.00 s | 1.00 s | 3 |",
		"| etcd: pod Ready | 7.00 s | 6.00 s | 8.00 s | 3 |",
		"| " + servedStep + " | 10.00 s | 10.00 s | 12.00 s | 2 |",
	}
	lines := strings.Split(strings.TrimSpace(got), "\n")[2:]
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("timelineMarkdown:\n%s\nwant rows:\n%s", got, strings.Join(want, "\n"))
	}
}
