package nodes

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// lockPath is the machine's one lock on real nodes: the nodes' network,
// names and the sysctls the kubelet changes are the machine's, so one set
// of nodes runs at a time (a local cluster's, or a test's), and each
// restores what it found. The file stays (a lock file removed while
// another process waits on it would let two in).
const lockPath = "/run/hsnodes.lock"

// Lock is the machine's lock on real nodes, held until Release.
type Lock struct{ f *os.File }

// TakeLock takes the machine's lock on real nodes, waiting up to wait for
// another holder to let go. It fails naming the holder's process.
func TakeLock(wait time.Duration) (*Lock, error) {
	f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("failed to open %s: %w", lockPath, err)
	}
	deadline := time.Now().Add(wait)
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			holder, _ := os.ReadFile(lockPath)
			_ = f.Close()
			if pid := strings.TrimSpace(string(holder)); pid != "" {
				return nil, fmt.Errorf("real nodes of another cluster run on this machine (process %s holds %s): stop it first (make stop, if it is make run's)", pid, lockPath)
			}
			return nil, fmt.Errorf("failed to lock %s: %w", lockPath, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	// A holder that died without stopping its nodes left them to us.
	done, err := Reap()
	if done != "" {
		fmt.Fprintln(os.Stderr, "Real nodes: "+done+".")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "Real nodes: "+err.Error())
	}
	return &Lock{f: f}, nil
}

// Release lets go of the lock.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	_ = l.f.Truncate(0)
	err := l.f.Close() // closing lets go of the lock
	l.f = nil
	return err
}

// LockForTest takes the machine's lock for t, waiting for other packages'
// tests (the end-to-end stories hold it for about 36 minutes, on three
// nodes; go test runs a package beside them), and returns
// it. When t ends, after the cleanups t registers later (its nodes' stop),
// it checks that the machine is as it found it under the lock, then
// releases the lock.
func LockForTest(t testing.TB) *Lock {
	t.Helper()
	lock, err := TakeLock(50 * time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lock.Release() })
	before := Snapshot()
	t.Cleanup(func() {
		if diff := Snapshot().Diff(before); diff != "" {
			t.Errorf("the machine is not as it was before the nodes started:\n%s", diff)
		}
	})
	return lock
}
