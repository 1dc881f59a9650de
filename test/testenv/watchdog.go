package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// watchdog kills the control plane's etcd and kube-apiserver when the test
// binary dies without stopping them: a panicking test or a `go test`
// timeout skips TestMain's Stop, and envtest starts both in process groups
// of their own with nothing tying them to the binary, so they ran on,
// orphaned, holding ports, memory and CPU through later tests and
// benchmarks. (kube-controller-manager and kube-scheduler, which the
// environment starts itself, die with it through their parent-death
// signal.)
//
// It is a shell, in a process group of its own (an interrupt sent to the
// test's group must not end it first), reading a pipe only this process
// holds: end of file, however the binary went, kills the processes; the
// line "stop", written by an orderly Stop, lets it exit without a kill.
type watchdog struct {
	pipe *os.File
	cmd  *exec.Cmd
}

// watchdogScript kills its arguments unless it reads "stop".
const watchdogScript = `read -r line; [ "$line" = stop ] || kill -9 "$@" 2>/dev/null; exit 0`

// startWatchdog watches the processes pids.
func startWatchdog(pids ...int) (*watchdog, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("failed to create the watchdog's pipe: %w", err)
	}
	args := []string{"-c", watchdogScript, "sh"}
	for _, pid := range pids {
		args = append(args, strconv.Itoa(pid))
	}
	cmd := exec.Command("/bin/sh", args...)
	cmd.Stdin = r
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	_ = r.Close()
	if err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("failed to start the watchdog: %w", err)
	}
	return &watchdog{pipe: w, cmd: cmd}, nil
}

// release ends the watchdog; with kill, it kills the processes first
// (those an orderly stop failed to end).
func (w *watchdog) release(kill bool) error {
	var err error
	if !kill {
		_, err = w.pipe.WriteString("stop\n")
	}
	err = errors.Join(err, w.pipe.Close())
	exited := make(chan error, 1)
	go func() { exited <- w.cmd.Wait() }()
	select {
	case waitErr := <-exited:
		return errors.Join(err, waitErr)
	case <-time.After(10 * time.Second):
		_ = w.cmd.Process.Kill()
		return errors.Join(err, errors.New("the watchdog did not exit within 10s"))
	}
}

// watchControlPlane starts the watchdog of the environment's etcd and
// kube-apiserver.
func (e *Env) watchControlPlane() error {
	var pids []int
	for _, name := range []string{"kube-apiserver", "etcd"} {
		p, err := e.Process(name)
		if err != nil {
			return err
		}
		pids = append(pids, p.Pid)
	}
	w, err := startWatchdog(pids...)
	if err != nil {
		return err
	}
	e.watchdog = w
	return nil
}
