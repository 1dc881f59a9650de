package nodes

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// State is what nodes may change on the host and must leave as it was:
// mounts, network namespaces, links, routes, the host's iptables rules,
// top-level cgroups, and the sysctls the nodes or their kubelets set.
type State map[string][]string

// Snapshot reads the host's State.
func Snapshot() State {
	s := State{}
	if data, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			if fields := strings.Fields(line); len(fields) > 4 {
				s["mounts"] = append(s["mounts"], fields[4])
			}
		}
	}
	s["network namespaces"] = lines("ip", "netns", "list")
	s["links"] = fieldOf(lines("ip", "-o", "link", "show"), 1)
	s["routes"] = lines("ip", "route", "show")
	for _, line := range lines("iptables-save") {
		if !strings.HasPrefix(line, "#") {
			s["iptables"] = append(s["iptables"], line)
		}
	}
	cgroups, _ := filepath.Glob("/sys/fs/cgroup/*/*")
	for _, c := range cgroups {
		if info, err := os.Stat(c); err == nil && info.IsDir() {
			s["cgroups"] = append(s["cgroups"], c)
		}
	}
	for _, name := range []string{"vm.overcommit_memory", "kernel.panic", "kernel.panic_on_oops", "net.ipv4.ip_forward"} {
		value, _ := readSysctl(name)
		s["sysctls"] = append(s["sysctls"], name+"="+value)
	}
	for k := range s {
		slices.Sort(s[k])
	}
	return s
}

// Diff says what differs between s and before ("" when nothing does).
func (s State) Diff(before State) string {
	var b strings.Builder
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range s[k] {
			if !slices.Contains(before[k], v) {
				fmt.Fprintf(&b, "%s: + %s\n", k, v)
			}
		}
		for _, v := range before[k] {
			if !slices.Contains(s[k], v) {
				fmt.Fprintf(&b, "%s: - %s\n", k, v)
			}
		}
	}
	return b.String()
}

func lines(name string, args ...string) []string {
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		return []string{fmt.Sprintf("(%s: %v)", name, err)}
	}
	var ls []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l != "" {
			ls = append(ls, l)
		}
	}
	return ls
}

func fieldOf(ls []string, i int) []string {
	var out []string
	for _, l := range ls {
		if f := strings.Fields(l); len(f) > i {
			out = append(out, f[i])
		}
	}
	return out
}
