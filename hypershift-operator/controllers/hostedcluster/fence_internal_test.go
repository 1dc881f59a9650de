package hostedcluster

import (
	"testing"
	"time"
)

func TestNotInForceRecheck(t *testing.T) {
	for n, want := range map[int]time.Duration{
		1:  2 * time.Second,
		2:  4 * time.Second,
		3:  8 * time.Second,
		4:  10 * time.Second,
		50: 10 * time.Second,
	} {
		if got := notInForceRecheck(n); got != want {
			t.Errorf("after %d probes in a row found the binding not in force, the next waits %s, want %s", n, got, want)
		}
	}
}
