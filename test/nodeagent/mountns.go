package nodeagent

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

const (
	// serviceAccountDir is where rest.InClusterConfig reads the token, the
	// CA and the namespace: a fixed path that no path rewrite can change.
	serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"
	// mountHelperName is argv[0] of the agent's own program when it runs as
	// the helper that sets up a process's mount namespace.
	mountHelperName = "nodeagent-mount-helper"
	// mountHelperEnv carries the helper's bind mounts, as JSON.
	mountHelperEnv = "NODEAGENT_BIND_MOUNTS"
)

// bindMount makes source visible at target in a process's mount namespace.
type bindMount struct {
	Source string `json:"source"`
	Target string `json:"target"`
}

// launcher says how a process starts: directly, or through the mount
// helper in a mount namespace of its own with binds.
type launcher struct {
	binds []bindMount
}

func init() {
	if len(os.Args) > 1 && os.Args[0] == mountHelperName {
		runMountHelper(os.Args[1], os.Args[2:])
	}
}

// runMountHelper runs in a new mount namespace: it keeps its mounts from
// propagating back to the host, makes the bind mounts read-only, and
// executes path with argv (argv[0] included) in its place, keeping its
// pid. It never returns.
func runMountHelper(path string, argv []string) {
	var binds []bindMount
	if err := json.Unmarshal([]byte(os.Getenv(mountHelperEnv)), &binds); err != nil {
		fail(fmt.Errorf("bad %s: %w", mountHelperEnv, err))
	}
	_ = os.Unsetenv(mountHelperEnv)
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		fail(fmt.Errorf("failed to make the mounts private: %w", err))
	}
	for _, b := range binds {
		if err := syscall.Mount(b.Source, b.Target, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
			fail(fmt.Errorf("failed to bind %s to %s: %w", b.Source, b.Target, err))
		}
		if err := syscall.Mount("", b.Target, "", syscall.MS_REMOUNT|syscall.MS_BIND|syscall.MS_RDONLY, ""); err != nil {
			fail(fmt.Errorf("failed to make %s read-only: %w", b.Target, err))
		}
	}
	fail(syscall.Exec(path, argv, os.Environ()))
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "%s: %v\n", mountHelperName, err)
	os.Exit(127)
}

// command returns the command that runs path with argv, directly or
// through the mount helper.
func (l launcher) command(path string, argv, env []string) (*exec.Cmd, error) {
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if len(l.binds) == 0 {
		cmd := exec.Command(path, argv...)
		cmd.Env, cmd.SysProcAttr = env, attr
		return cmd, nil
	}
	// The helper's exec fails late: find the program now, as exec.Command
	// would.
	if _, err := exec.LookPath(path); err != nil {
		return nil, fmt.Errorf("failed to start %s: %w", path, err)
	}
	raw, err := json.Marshal(l.binds)
	if err != nil {
		return nil, fmt.Errorf("failed to encode the bind mounts: %w", err)
	}
	attr.Cloneflags = syscall.CLONE_NEWNS
	cmd := &exec.Cmd{
		Path:        "/proc/self/exe",
		Args:        append([]string{mountHelperName, path, path}, argv...),
		Env:         append(append([]string{}, env...), mountHelperEnv+"="+string(raw)),
		SysProcAttr: attr,
	}
	return cmd, nil
}

// bindMounts returns the bind mounts a container's process gets: its
// volume at the in-cluster ServiceAccount directory, when mount namespaces
// work on this machine. Other mount paths are left to the path rewrite.
func (a *Agent) bindMounts(mounts []mountPoint) []bindMount {
	if !a.mountNamespaces {
		return nil
	}
	for _, m := range mounts {
		if m.path == serviceAccountDir {
			return []bindMount{{Source: m.host, Target: serviceAccountDir}}
		}
	}
	return nil
}

func (a *Agent) launcher(binds []bindMount) launcher { return launcher{binds: binds} }

// probeMountNamespaces reports whether processes can get the in-cluster
// ServiceAccount directory in a mount namespace of their own: it creates
// the (empty) mount point when missing, which takes root, and runs a
// process that must find a file bound there.
func probeMountNamespaces(stateDir string) error {
	if err := os.MkdirAll(serviceAccountDir, 0o755); err != nil {
		return fmt.Errorf("failed to create the mount point %s: %w", serviceAccountDir, err)
	}
	dir, err := os.MkdirTemp(stateDir, "probe-")
	if err != nil {
		return fmt.Errorf("failed to create a probe directory: %w", err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	if err := os.WriteFile(filepath.Join(dir, "probe"), nil, 0o600); err != nil {
		return fmt.Errorf("failed to write a probe file: %w", err)
	}
	test, err := exec.LookPath("test")
	if err != nil {
		return fmt.Errorf("failed to find test(1): %w", err)
	}
	l := launcher{binds: []bindMount{{Source: dir, Target: serviceAccountDir}}}
	cmd, err := l.command(test, []string{"-e", filepath.Join(serviceAccountDir, "probe")}, nil)
	if err != nil {
		return err
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("a process in a mount namespace of its own did not find its bound file: %w: %s", err, out)
	}
	return nil
}
