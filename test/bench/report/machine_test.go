package report

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestProcBytesAndField(t *testing.T) {
	path := filepath.Join(t.TempDir(), "status")
	status := "Name:\tkube-apiserver\nVmHWM:\t  346112 kB\nVmRSS:\t  301056 kB\nThreads:\t12\n"
	if err := os.WriteFile(path, []byte(status), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := ProcBytes(path, "VmRSS", "VmHWM"); err != nil || len(got) != 2 || got[0] != 301056<<10 || got[1] != 346112<<10 {
		t.Errorf("ProcBytes(VmRSS, VmHWM) = %v, %v; want [%d %d]", got, err, 301056<<10, 346112<<10)
	}
	if _, err := ProcBytes(path, "VmRSS", "VmSwap"); err == nil {
		t.Error("ProcBytes(VmSwap) of a status without it: no error")
	}
	if _, err := ProcBytes(path, "Threads"); err == nil {
		t.Error("ProcBytes(Threads), a count not in kB: no error")
	}
	if _, err := ProcBytes(filepath.Join(t.TempDir(), "gone"), "VmRSS"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ProcBytes of a missing file (a process gone): error %v, want the file's own", err)
	}
	if got := ProcField(path, "VmRSS"); got != "294 MiB" {
		t.Errorf("ProcField(VmRSS) = %q, want 294 MiB", got)
	}
	if got := ProcField(path, "Name"); got != "kube-apiserver" {
		t.Errorf("ProcField(Name) = %q, want kube-apiserver", got)
	}
}
