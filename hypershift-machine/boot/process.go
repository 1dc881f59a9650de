package boot

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// stopTimeout is how long a stopped process has after SIGTERM before it is
// killed: the kubelet's own shutdown is quick, the Pod's grace period
// bounds the whole.
const stopTimeout = 10 * time.Second

// process is one program the machine runs.
type process struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// exited records how the process ended.
func (p *process) exited(status syscall.WaitStatus) {
	switch {
	case status.Exited() && status.ExitStatus() == 0:
	case status.Exited():
		p.err = fmt.Errorf("exit status %d", status.ExitStatus())
	case status.Signaled():
		p.err = fmt.Errorf("killed by %s", status.Signal())
	}
	close(p.done)
}

// start starts program, its output on the machine's (the Pod's log).
func (m *machine) start(name, program string, args ...string) (*process, error) {
	cmd := exec.Command(program, args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	p := &process{name: name, cmd: cmd, done: make(chan struct{})}
	if err := m.reaper.start(p); err != nil {
		return nil, fmt.Errorf("failed to start %s: %w", name, err)
	}
	m.processes = append(m.processes, p)
	return p, nil
}

// startContainerd starts containerd and waits for its socket.
func (m *machine) startContainerd(ctx context.Context) error {
	p, err := m.start("containerd", "containerd", "--config", filepath.Join(ConfigDir, "containerd.toml"))
	if err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := net.Dial("unix", ContainerdSocket)
		if err == nil {
			return conn.Close()
		}
		select {
		case <-p.done:
			return fmt.Errorf("containerd exited: %w", p.err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("containerd serves no socket at %s after 30s: %w", ContainerdSocket, err)
		}
	}
}

// startKubelet starts the kubelet, which joins the hosted cluster.
func (m *machine) startKubelet(context.Context) error {
	_, err := m.start("kubelet", m.opts.KubeletPath, m.kubeletArgs()...)
	return err
}

// supervise waits until ctx ends or a process exits; either way it stops
// the others, the kubelet first (it was started last).
func (m *machine) supervise(ctx context.Context) error {
	exited := make(chan *process, len(m.processes))
	for _, p := range m.processes {
		go func() {
			<-p.done
			exited <- p
		}()
	}
	var err error
	select {
	case <-ctx.Done():
		m.log.Info("Machine stopping")
	case p := <-exited:
		err = fmt.Errorf("%s exited: %w", p.name, errors.Join(p.err, errors.New("the machine goes down with it")))
	}
	m.stop()
	return err
}

// stop stops every process still running, in reverse order of start.
func (m *machine) stop() {
	for i := len(m.processes) - 1; i >= 0; i-- {
		p := m.processes[i]
		select {
		case <-p.done:
			continue
		default:
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(stopTimeout):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
}
