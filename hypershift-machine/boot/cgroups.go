package boot

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

const cgroupMount = "/sys/fs/cgroup"

// hierarchy is one line of /proc/self/cgroup: a cgroup v1 hierarchy (its
// controllers, or name=...) or the unified one (no controllers), and the
// machine's cgroup in it.
type hierarchy struct {
	controllers string
	path        string
}

// parseCgroups reads /proc/self/cgroup's lines.
func parseCgroups(data string) ([]hierarchy, error) {
	var out []hierarchy
	for line := range strings.Lines(data) {
		fields := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(fields) != 3 {
			continue
		}
		out = append(out, hierarchy{controllers: fields[1], path: fields[2]})
	}
	if len(out) == 0 {
		return nil, errors.New("/proc/self/cgroup lists no hierarchy")
	}
	return out, nil
}

// mountDir is where a v1 hierarchy is mounted under /sys/fs/cgroup, as
// systemd mounts them ("name=systemd" at systemd; the unified one at
// unified).
func (h hierarchy) mountDir() string {
	switch {
	case h.controllers == "":
		return "unified"
	case strings.HasPrefix(h.controllers, "name="):
		return strings.TrimPrefix(h.controllers, "name=")
	default:
		return h.controllers
	}
}

// cgroupRoot is the machine's own cgroup, under which the kubelet puts its
// pods: the memory controller's path, whose limits are the Pod's.
func cgroupRoot(hs []hierarchy) (string, error) {
	for _, h := range hs {
		for c := range strings.SplitSeq(h.controllers, ",") {
			if c == "memory" {
				return h.path, nil
			}
		}
	}
	return "", errors.New("this management node has cgroup v2 only (no memory controller in a v1 hierarchy): machines of platform Pod need a management node with cgroup v1 or hybrid hierarchies")
}

// mountCgroups mounts every cgroup hierarchy whole, read-write, in place of
// the container runtime's view (the machine Pod's own cgroups only, at the
// root of each hierarchy): the kubelet and runc find their cgroups by the
// paths /proc/self/cgroup names, which only the whole hierarchies hold. The
// mounts are in the machine's mount namespace; they go with it.
func (m *machine) mountCgroups(context.Context) error {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return err
	}
	hs, err := parseCgroups(string(data))
	if err != nil {
		return err
	}
	if m.cgroup, err = cgroupRoot(hs); err != nil {
		return err
	}
	// The runtime's mounts go first, or they would still be listed under
	// the new ones (runc finds a hierarchy by its first mount there).
	if err := unix.Unmount(cgroupMount, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("failed to unmount the container runtime's %s: %w", cgroupMount, err)
	}
	if err := unix.Mount("tmpfs", cgroupMount, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=755"); err != nil {
		return fmt.Errorf("failed to mount a tmpfs at %s (is the machine's container privileged?): %w", cgroupMount, err)
	}
	for _, h := range hs {
		dir := filepath.Join(cgroupMount, h.mountDir())
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		fstype, options := "cgroup", h.controllers
		switch {
		case h.controllers == "":
			fstype, options = "cgroup2", ""
		case strings.HasPrefix(h.controllers, "name="):
			options = "none," + h.controllers
		}
		if err := unix.Mount("cgroup", dir, fstype, unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, options); err != nil {
			return fmt.Errorf("failed to mount the cgroup hierarchy %q at %s: %w", h.controllers, dir, err)
		}
		// A co-mounted hierarchy (cpu,cpuacct) is found by each name too.
		if parts := strings.Split(h.controllers, ","); len(parts) > 1 {
			for _, p := range parts {
				if err := os.Symlink(h.mountDir(), filepath.Join(cgroupMount, p)); err != nil && !errors.Is(err, os.ErrExist) {
					return err
				}
			}
		}
	}
	return nil
}
