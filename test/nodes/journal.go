package nodes

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
)

// journalDir holds one journal per live Host: each change the Host
// records, as a step that undoes it, appended as a JSON line as it is
// made. Close undoes the changes and removes the journal; a journal left
// behind is a process that died holding the lock (killed, crashed), and
// the next holder replays it (Reap), so that a local cluster killed mid-way
// does not leave the machine's network, mounts, cgroups and sysctls to be
// found by hand.
const journalDir = "/run/hsnodes.d"

// undoStep undoes one recorded change; exactly one field is set.
type undoStep struct {
	// Run is a command that undoes a command's change.
	Run []string `json:"run,omitempty"`
	// Sysctl is set back to Value, if it differs now.
	Sysctl string `json:"sysctl,omitempty"`
	Value  string `json:"value,omitempty"`
	// Unmount: everything mounted at or under this directory.
	Unmount string `json:"unmount,omitempty"`
	// RemoveAll removes this directory and all it holds.
	RemoveAll string `json:"removeAll,omitempty"`
	// KillMatching kills every process whose command line holds it.
	KillMatching string `json:"killMatching,omitempty"`
	// Cgroups: this cgroup in every hierarchy, its processes killed.
	Cgroups string `json:"cgroups,omitempty"`
	// NetnsDir puts /run/netns back as it was.
	NetnsDir *netnsDirState `json:"netnsDir,omitempty"`
	// Process is killed, if it still runs that program.
	Process *processRef `json:"process,omitempty"`
}

type netnsDirState struct{ Existed, Mounted bool }

type processRef struct {
	PID  int
	Path string
}

// do undoes the step's change.
func (s undoStep) do() error {
	switch {
	case s.Run != nil:
		return run(s.Run[0], s.Run[1:]...)
	case s.Sysctl != "":
		if now, err := readSysctl(s.Sysctl); err != nil || now == s.Value {
			return err
		}
		return writeSysctl(s.Sysctl, s.Value)
	case s.Unmount != "":
		var errs []error
		for _, m := range mountsUnder(s.Unmount) {
			if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
				errs = append(errs, fmt.Errorf("failed to unmount %s: %w", m, err))
			}
		}
		return errors.Join(errs...)
	case s.RemoveAll != "":
		return os.RemoveAll(s.RemoveAll)
	case s.KillMatching != "":
		return killMatching(s.KillMatching)
	case s.Cgroups != "":
		return removeCgroups(s.Cgroups)
	case s.NetnsDir != nil:
		return restoreNetnsDir(*s.NetnsDir)
	case s.Process != nil:
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", s.Process.PID)); err == nil && exe == s.Process.Path {
			return syscall.Kill(s.Process.PID, syscall.SIGKILL)
		}
		return nil
	}
	return nil
}

// String names the change the step undoes, for errors.
func (s undoStep) String() string {
	switch {
	case s.Run != nil:
		return "`" + strings.Join(s.Run, " ") + "`"
	case s.Sysctl != "":
		return "sysctl " + s.Sysctl + " (back to " + s.Value + ")"
	case s.Unmount != "":
		return "mounts under " + s.Unmount
	case s.RemoveAll != "":
		return "directory " + s.RemoveAll
	case s.KillMatching != "":
		return "processes of " + s.KillMatching
	case s.Cgroups != "":
		return "cgroups " + s.Cgroups
	case s.NetnsDir != nil:
		return "the state of /run/netns"
	case s.Process != nil:
		return fmt.Sprintf("process %s (%d)", filepath.Base(s.Process.Path), s.Process.PID)
	}
	return "nothing"
}

var journals atomic.Int64

// journal appends s to the Host's journal, creating it on first use. A
// journal that cannot be written is not fatal: Close still undoes all.
func (h *Host) journal(s undoStep) {
	if h.journalPath == "" {
		if err := os.MkdirAll(journalDir, 0o700); err != nil {
			return
		}
		h.journalPath = filepath.Join(journalDir, fmt.Sprintf("%d-%d.jsonl", os.Getpid(), journals.Add(1)))
	}
	f, err := os.OpenFile(h.journalPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return
	}
	defer func() { _ = f.Close() }()
	data, _ := json.Marshal(s)
	_, _ = f.Write(append(data, '\n'))
}

// Reap undoes what the Hosts of another process left on this machine, as
// their Close would have, newest change first, and says what it undid; it
// removes their journals, undone or not (what could not be undone is in
// the error: the nodes' own checks name what is still in the way). The
// caller holds the machine's Lock (TakeLock reaps): Hosts live under the
// Lock, so another process's journal is a dead holder's.
func Reap() (string, error) {
	paths, _ := filepath.Glob(filepath.Join(journalDir, "*.jsonl"))
	var done []string
	var errs []error
	for _, path := range paths {
		pid, _, _ := strings.Cut(filepath.Base(path), "-")
		if n, err := strconv.Atoi(pid); err == nil && n == os.Getpid() {
			continue // this process's live Host: its Close undoes it
		}
		steps, err := readJournal(path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var failed []error
		for i := len(steps) - 1; i >= 0; i-- {
			if err := steps[i].do(); err != nil {
				failed = append(failed, fmt.Errorf("failed to undo %s: %w", steps[i], err))
			}
		}
		if err := os.Remove(path); err != nil {
			errs = append(errs, err)
		}
		if len(failed) > 0 {
			errs = append(errs, fmt.Errorf("the nodes of process %s, which ended without stopping them, left changes that could not be undone: %w", pid, errors.Join(failed...)))
			continue
		}
		done = append(done, fmt.Sprintf("undid the %d changes the nodes of process %s left (it ended without stopping them)", len(steps), pid))
	}
	return strings.Join(done, "; "), errors.Join(errs...)
}

func readJournal(path string) ([]undoStep, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var steps []undoStep
	s := bufio.NewScanner(f)
	for s.Scan() {
		var st undoStep
		if err := json.Unmarshal(s.Bytes(), &st); err != nil {
			// A line cut short by the crash: what came before it stands.
			continue
		}
		steps = append(steps, st)
	}
	return steps, s.Err()
}
