// Package operatorprocess runs an operator binary as a real process for a
// test or a benchmark: as a pod would (POD_NAME set) and as a user of its
// own (a kubeconfig), with its output kept, signals to send (SIGTERM,
// SIGSTOP, SIGKILL), and its exit code and time recorded. Started for a
// test, the process gets SIGTERM when the test ends, and SIGKILL if it has
// not exited 20 seconds later; a failed test logs the end of its output.
package operatorprocess

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/releaseinfo/releasetest"
)

// stopGrace is how long a process gets to exit after SIGTERM at cleanup.
const stopGrace = 20 * time.Second

// Process is one running operator.
type Process struct {
	// Pod is the POD_NAME it runs with: its Lease identity.
	Pod string
	cmd *exec.Cmd

	mu     sync.Mutex
	output bytes.Buffer

	// done is closed once the process has exited and its output is
	// complete; exitErr and exitedAt are set before.
	done     chan struct{}
	exitErr  error
	exitedAt time.Time
}

// Options says how Launch runs a process.
type Options struct {
	// Pod is the POD_NAME it runs with, its Lease identity; "" for none.
	Pod string
	// Env is added to this process's environment.
	Env []string
	// Output receives its stdout and stderr; nil keeps them in memory, for
	// Output.
	Output io.Writer
}

// Launch runs binary with args as opts says. The process dies with this
// one, even when this one is killed; Stop ends it.
func Launch(binary string, args []string, opts Options) (*Process, error) {
	p := &Process{Pod: opts.Pod, done: make(chan struct{})}
	p.cmd = exec.Command(binary, args...)
	p.cmd.Env = os.Environ()
	if opts.Pod != "" {
		p.cmd.Env = append(p.cmd.Env, hyperv1.PodNameEnv+"="+opts.Pod)
	}
	p.cmd.Env = append(p.cmd.Env, opts.Env...)
	// exec copies the output from pipes; Wait returns once the copying is
	// done, so the output is complete when done is closed.
	var out io.Writer = p
	if opts.Output != nil {
		out = opts.Output
	}
	p.cmd.Stdout, p.cmd.Stderr = out, out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("failed to start %s: %w", binary, err)
	}
	go func() {
		err := p.cmd.Wait()
		p.mu.Lock()
		p.exitErr, p.exitedAt = err, time.Now()
		p.mu.Unlock()
		close(p.done)
	}()
	return p, nil
}

// Start runs binary with args as pod (POD_NAME), with env added to this
// process's environment, until the test ends; its output is kept in memory.
func Start(t testing.TB, binary, pod string, args []string, env ...string) *Process {
	t.Helper()
	p, err := Launch(binary, args, Options{Pod: pod, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.Stop(stopGrace)
		if t.Failed() {
			t.Logf("%s output:\n%s", pod, Tail(p.Output(), 4000))
		}
	})
	return p
}

// Stop sends SIGTERM (after SIGCONT: a frozen process could not stop),
// kills the process if it has not exited grace later, and returns Wait's
// error (nil for exit code 0). It may be called more than once.
func (p *Process) Stop(grace time.Duration) error {
	select {
	case <-p.done:
	default:
		_ = p.Signal(syscall.SIGCONT)
		_ = p.Signal(syscall.SIGTERM)
		if !p.Exited(grace) {
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
	return p.ExitErr()
}

// PID is the process's ID.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Write keeps the process's output.
func (p *Process) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.output.Write(b)
}

// Output is everything the process wrote so far, stdout and stderr.
func (p *Process) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.output.String()
}

// Signal sends sig to the process; it fails once the process has exited.
func (p *Process) Signal(sig os.Signal) error {
	return p.cmd.Process.Signal(sig)
}

// Done is closed once the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited waits up to timeout for the process to exit.
func (p *Process) Exited(timeout time.Duration) bool {
	select {
	case <-p.done:
		return true
	case <-time.After(timeout):
		return false
	}
}

// ExitErr is Wait's error once the process has exited (nil for exit code
// 0); nil while it runs.
func (p *Process) ExitErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exitErr
}

// ExitedAt is when the process exited; zero while it runs.
func (p *Process) ExitedAt() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exitedAt
}

// FreeAddress returns a local TCP address nothing listens on now, for an
// operator to bind its probes to.
func FreeAddress(t testing.TB) string {
	t.Helper()
	return releasetest.UnreachableHost(t)
}

// Tail is the last n bytes of s.
func Tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
