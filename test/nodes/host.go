package nodes

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Host owns every change the nodes make to this machine: each step that
// changes it records how to undo the change, and Close undoes them all, in
// reverse order, once the nodes' processes are gone. What the kubelet
// changes by itself (sysctls, mounts under its root directory, cgroups
// under its cgroup root) is recorded before it starts.
type Host struct {
	mu          sync.Mutex
	undos       []undo
	journalPath string // see journalDir
}

type undo struct {
	what string
	do   func() error
}

// record adds the step that undoes a change just made, and journals it.
func (h *Host) record(s undoStep) {
	h.recordDo(s, s.do)
}

// recordDo records s, undone in this process by do (which may know more
// than the journal: a process it started and waits for).
func (h *Host) recordDo(s undoStep, do func() error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.undos = append(h.undos, undo{what: s.String(), do: do})
	h.journal(s)
}

// Close undoes every recorded change, newest first, and returns what could
// not be undone.
func (h *Host) Close() error {
	h.mu.Lock()
	undos, journal := h.undos, h.journalPath
	h.undos, h.journalPath = nil, ""
	h.mu.Unlock()
	var errs []error
	for i := len(undos) - 1; i >= 0; i-- {
		if err := undos[i].do(); err != nil {
			errs = append(errs, fmt.Errorf("failed to undo %s: %w", undos[i].what, err))
		}
	}
	if journal != "" {
		_ = os.Remove(journal)
	}
	return errors.Join(errs...)
}

// run runs a command on the host and returns its error with its output.
func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Run runs a command whose change undo reverses, and records undo.
func (h *Host) Run(undo []string, cmd ...string) error {
	if err := run(cmd[0], cmd[1:]...); err != nil {
		return err
	}
	if undo != nil {
		h.record(undoStep{Run: undo})
	}
	return nil
}

// Sysctl sets a sysctl of the host's network namespace (or a global one),
// restoring the value it had on Close.
func (h *Host) Sysctl(name, value string) error {
	old, err := readSysctl(name)
	if err != nil {
		return err
	}
	if old == value {
		return nil
	}
	if err := writeSysctl(name, value); err != nil {
		return err
	}
	h.record(undoStep{Sysctl: name, Value: old})
	return nil
}

// KeepSysctls restores the sysctls names, on Close, to the values they have
// now: for a program that changes them by itself (the kubelet).
func (h *Host) KeepSysctls(names ...string) error {
	for _, name := range names {
		old, err := readSysctl(name)
		if err != nil {
			return err
		}
		h.record(undoStep{Sysctl: name, Value: old})
	}
	return nil
}

func sysctlPath(name string) string {
	return filepath.Join("/proc/sys", strings.ReplaceAll(name, ".", "/"))
}

func readSysctl(name string) (string, error) {
	data, err := os.ReadFile(sysctlPath(name))
	if err != nil {
		return "", fmt.Errorf("failed to read sysctl %s: %w", name, err)
	}
	return strings.TrimSpace(string(data)), nil
}

func writeSysctl(name, value string) error {
	if err := os.WriteFile(sysctlPath(name), []byte(value), 0o644); err != nil {
		return fmt.Errorf("failed to set sysctl %s=%s: %w", name, value, err)
	}
	return nil
}

// Start starts a process and records its stop: SIGTERM, then SIGKILL after
// grace, by PID, then waiting for it.
func (h *Host) Start(cmd *exec.Cmd, grace time.Duration) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("failed to start %s: %w", cmd.Path, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	h.recordDo(undoStep{Process: &processRef{PID: cmd.Process.Pid, Path: cmd.Path}}, func() error {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(grace):
			_ = cmd.Process.Kill()
			<-done
		}
		return nil
	})
	return nil
}

// UnmountUnder records, for Close, the unmounting of everything mounted
// under dir by then (deepest first): what containerd and the kubelet mount
// for pods, and the kubelet's bind mount of its root directory.
func (h *Host) UnmountUnder(dir string) {
	h.record(undoStep{Unmount: dir})
}

// mountsUnder lists the mount points at or under dir, deepest first.
func mountsUnder(dir string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer func() { _ = f.Close() }()
	var points []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 5 {
			continue
		}
		point := unescapeMountPoint(fields[4])
		if point == dir || strings.HasPrefix(point, dir+"/") {
			points = append(points, point)
		}
	}
	slices.SortFunc(points, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	return slices.Compact(points)
}

func unescapeMountPoint(s string) string {
	return strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`).Replace(s)
}

// Cgroup creates the cgroup name at the top of every hierarchy (a cpuset
// one gets its parent's CPUs and memory nodes, as v1 needs before it holds
// a task), and records, for Close, the removal of it and everything under
// it, deepest first: the kubelet's cgroup root with its pods' cgroups.
func (h *Host) Cgroup(name string) error {
	hierarchies, err := filepath.Glob("/sys/fs/cgroup/*")
	if err != nil {
		return err
	}
	h.record(undoStep{Cgroups: name})
	for _, hierarchy := range hierarchies {
		if info, err := os.Lstat(hierarchy); err != nil || !info.IsDir() {
			continue // cpu,cpuacct-style symlinks name a hierarchy twice
		}
		dir := filepath.Join(hierarchy, name)
		if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
			return fmt.Errorf("failed to create cgroup %s: %w", dir, err)
		}
		for _, file := range []string{"cpuset.cpus", "cpuset.mems"} {
			if value, err := os.ReadFile(filepath.Join(hierarchy, file)); err == nil {
				if err := os.WriteFile(filepath.Join(dir, file), value, 0o644); err != nil {
					return fmt.Errorf("failed to set %s of cgroup %s: %w", file, dir, err)
				}
			}
		}
	}
	return nil
}

// removeCgroups removes the cgroup name in every hierarchy and everything
// under it, deepest first, once every process in them is killed.
func removeCgroups(name string) error {
	roots, _ := filepath.Glob("/sys/fs/cgroup/*/" + name)
	if unified := "/sys/fs/cgroup/" + name; exists(unified) {
		roots = append(roots, unified)
	}
	var errs []error
	for _, root := range roots {
		killCgroup(root)
	}
	// A killed process leaves its cgroup only once it has exited: a
	// cgroup still holding one is busy.
	deadline := time.Now().Add(10 * time.Second)
	for slices.ContainsFunc(roots, cgroupHoldsProcesses) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	for _, root := range roots {
		var dirs []string
		_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := os.Remove(dirs[i]); err != nil && !os.IsNotExist(err) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// cgroupHoldsProcesses reports whether a process is in the cgroup at root
// or under it.
func cgroupHoldsProcesses(root string) bool {
	held := false
	_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "cgroup.procs" {
			if data, _ := os.ReadFile(path); len(strings.TrimSpace(string(data))) > 0 {
				held = true
				return filepath.SkipAll
			}
		}
		return nil
	})
	return held
}

// killCgroup kills every process in the cgroup at root and under it.
func killCgroup(root string) {
	_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
			return nil
		}
		data, _ := os.ReadFile(path)
		for _, field := range strings.Fields(string(data)) {
			var pid int
			if _, err := fmt.Sscan(field, &pid); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		return nil
	})
}
