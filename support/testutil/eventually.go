package testutil

import (
	"testing"
	"time"
)

// Eventually polls check every 100ms until it returns nil, and fails the
// test with check's last error once timeout has passed.
func Eventually(t testing.TB, timeout time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not true after %s: %v", timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
