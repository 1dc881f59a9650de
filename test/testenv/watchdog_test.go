package testenv

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hypershift-le/hypershift/support/testutil"
)

// dieWithoutStopEnv makes the test binary start a control plane, print its
// processes and panic, as a test does that skips TestMain's Stop.
const dieWithoutStopEnv = "TESTENV_DIE_WITHOUT_STOP"

func dieWithoutStop() {
	e, err := Start(context.Background(), Options{SkipCRDs: true, SkipAdmissionPolicies: true})
	if err != nil {
		fmt.Println("start:", err)
		os.Exit(1)
	}
	for _, name := range []string{"kube-apiserver", "etcd"} {
		p, err := e.Process(name)
		if err != nil {
			fmt.Println("process:", err)
			os.Exit(1)
		}
		fmt.Println("pid", p.Pid)
	}
	panic("a test panicked: TestMain's Stop does not run")
}

// TestTheControlPlaneDiesWithTheBinary: a test binary that panics does not
// leave its etcd and kube-apiserver running.
func TestTheControlPlaneDiesWithTheBinary(t *testing.T) {
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), dieWithoutStopEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pids []int
	scanner := bufio.NewScanner(out)
	for scanner.Scan() {
		line := scanner.Text()
		if rest, ok := strings.CutPrefix(line, "pid "); ok {
			pid, err := strconv.Atoi(rest)
			if err != nil {
				t.Fatal(err)
			}
			pids = append(pids, pid)
		} else {
			t.Log(line)
		}
	}
	var exit *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &exit) {
		t.Fatalf("the binary should have died of its panic, got %v", err)
	}
	if len(pids) != 2 {
		t.Fatalf("the binary named processes %v, want its kube-apiserver and etcd", pids)
	}
	died := time.Now()
	defer func() {
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL) // what the test found running, or a failed check
		}
	}()
	testutil.Eventually(t, 10*time.Second, func() error {
		for _, pid := range pids {
			if comm, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "comm")); err == nil {
				return fmt.Errorf("%s (%d) still runs %s after the binary died", strings.TrimSpace(string(comm)), pid, time.Since(died).Round(time.Second))
			}
		}
		return nil
	})
	pids = nil
}
