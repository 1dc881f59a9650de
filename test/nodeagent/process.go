package nodeagent

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// groupGoneTimeout bounds the wait for the rest of a process group to go
// once its leader exited and the group got SIGKILL.
const groupGoneTimeout = 5 * time.Second

// process is one run of a container: a process leading a process group of
// its own, so that signals reach what it started too. When the leader exits,
// whatever is left of the group is killed, as a container runtime tears a
// container down.
type process struct {
	pid  int
	done chan struct{}
	// Set before done closes.
	exitCode   int32
	finishedAt time.Time
}

// startProcess runs path with argv as l says, appending its output to
// logPath after a "--- started" line. The process writes into a pipe the
// agent copies to the log once that line is written, so the line always
// comes first, even when the program writes before its pid is known. The
// process dies with the agent (Pdeathsig).
func startProcess(l launcher, path string, argv, env []string, dir, logPath string) (*process, error) {
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("failed to open the log: %w", err)
	}
	cmd, err := l.command(path, argv, env)
	if err != nil {
		_ = logFile.Close()
		return nil, err
	}
	out, in, err := os.Pipe()
	if err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("failed to make the output pipe: %w", err)
	}
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = in, in
	err = cmd.Start()
	_ = in.Close() // the child holds its own copy
	if err != nil {
		_ = out.Close()
		_, _ = fmt.Fprintf(logFile, "--- failed to start %s at %s: %v\n", path, time.Now().Format(time.RFC3339Nano), err)
		_ = logFile.Close()
		return nil, fmt.Errorf("failed to start %s: %w", path, err)
	}
	p := &process{pid: cmd.Process.Pid, done: make(chan struct{})}
	_, _ = fmt.Fprintf(logFile, "--- started %s pid %d\n", time.Now().Format(time.RFC3339Nano), p.pid)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(logFile, out)
	}()
	go func() {
		_ = cmd.Wait()
		p.exitCode = exitCode(cmd.ProcessState)
		p.finishedAt = time.Now()
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
		waitGroupGone(p.pid, groupGoneTimeout)
		// Whatever escaped the group may hold the pipe: the log ends anyway.
		select {
		case <-copied:
		case <-time.After(groupGoneTimeout):
		}
		_ = out.Close()
		<-copied
		_, _ = fmt.Fprintf(logFile, "--- exited %s pid %d code %d\n", p.finishedAt.Format(time.RFC3339Nano), p.pid, p.exitCode)
		_ = logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// exitCode follows container runtimes: 128+n for a process killed by
// signal n.
func exitCode(state *os.ProcessState) int32 {
	if state == nil {
		return 128
	}
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int32(ws.Signal())
	}
	return int32(state.ExitCode())
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signal sends sig to the whole process group while it runs.
func (p *process) signal(sig syscall.Signal) {
	if p.exited() {
		return
	}
	if err := syscall.Kill(-p.pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		_ = syscall.Kill(p.pid, sig)
	}
}

// terminate sends SIGTERM, then SIGKILL when the process is still there
// after grace, and returns once it is gone.
func (p *process) terminate(grace time.Duration) {
	p.signal(syscall.SIGTERM)
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-p.done:
	case <-timer.C:
		p.signal(syscall.SIGKILL)
		<-p.done
	}
}

// waitGroupGone waits until no live (non-zombie) process is left in the
// process group, or timeout passes. Zombies count as gone: reaping the
// group's orphans is up to PID 1.
func waitGroupGone(pgid int, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for groupAlive(pgid) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
}

func groupAlive(pgid int) bool {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		state, group, ok := procStat(filepath.Join("/proc", e.Name(), "stat"))
		if ok && group == pgid && state != 'Z' && state != 'X' {
			return true
		}
	}
	return false
}

// procStat reads a process's state and process group from /proc/<pid>/stat.
func procStat(path string) (state byte, pgid int, ok bool) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, false
	}
	// pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses.
	end := bytes.LastIndexByte(raw, ')')
	if end < 0 {
		return 0, 0, false
	}
	fields := bytes.Fields(raw[end+1:])
	if len(fields) < 3 || len(fields[0]) != 1 {
		return 0, 0, false
	}
	pgid, err = strconv.Atoi(string(fields[2]))
	if err != nil {
		return 0, 0, false
	}
	return fields[0][0], pgid, true
}
