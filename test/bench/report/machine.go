package report

import (
	"bufio"
	"debug/buildinfo"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/discovery"

	"github.com/hypershift-le/hypershift/test/testenv"
)

// CommandLine is how this run was started: target (e.g. `make
// bench-scale`) when no flag was set, else `go run pkg` with the flags that
// were set.
func CommandLine(target, pkg string) string {
	var set []string
	flag.Visit(func(f *flag.Flag) { set = append(set, "-"+f.Name+"="+f.Value.String()) })
	if len(set) == 0 {
		return target
	}
	return "go run " + pkg + " " + strings.Join(set, " ")
}

// Machine names the CPUs, memory, Go and the API server's and etcd's
// versions.
func Machine(env *testenv.Env) string {
	parts := []string{fmt.Sprintf("%d CPUs", runtime.NumCPU())}
	if model := ProcField("/proc/cpuinfo", "model name"); model != "" {
		parts[0] += " (" + model + ")"
	}
	if mem := ProcField("/proc/meminfo", "MemTotal"); mem != "" {
		parts = append(parts, mem+" memory")
	}
	parts = append(parts, "Go "+goVersion())
	if v := apiServerVersion(env); v != "" {
		parts = append(parts, "kube-apiserver "+v)
	}
	if v := etcdVersion(); v != "" {
		parts = append(parts, "etcd "+v)
	}
	return strings.Join(parts, ", ")
}

// goVersion is `go version`'s answer, else the version this was built with.
func goVersion() string {
	out, err := exec.Command("go", "version").Output()
	if fields := strings.Fields(string(out)); err == nil && len(fields) >= 4 {
		return strings.TrimPrefix(fields[2], "go") + " " + fields[3]
	}
	return strings.TrimPrefix(runtime.Version(), "go") + " " + runtime.GOOS + "/" + runtime.GOARCH
}

// apiServerVersion is the version the API server reports or, when it was
// built without version stamps (as `make testbin` builds it), the version of
// k8s.io/kubernetes it was built from.
func apiServerVersion(env *testenv.Env) string {
	var reported string
	if dc, err := discovery.NewDiscoveryClientForConfig(env.Config); err == nil {
		if v, err := dc.ServerVersion(); err == nil {
			reported = v.GitVersion
		}
	}
	if reported != "" && !strings.HasPrefix(reported, "v0.0.0") {
		return reported
	}
	dir, err := testenv.BinaryAssetsDirectory()
	if err != nil {
		return reported
	}
	info, err := buildinfo.ReadFile(filepath.Join(dir, "kube-apiserver"))
	if err != nil {
		return reported
	}
	for _, dep := range info.Deps {
		if dep.Path == "k8s.io/kubernetes" {
			return dep.Version
		}
	}
	return reported
}

func etcdVersion() string {
	dir, err := testenv.BinaryAssetsDirectory()
	if err != nil {
		return ""
	}
	out, err := exec.Command(filepath.Join(dir, "etcd"), "--version").Output()
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "etcd Version: "); ok {
			return "v" + strings.TrimSpace(v)
		}
	}
	return ""
}

// ProcField returns the value of the first "key: value" line of a /proc
// file, e.g. MemTotal of /proc/meminfo, made readable.
func ProcField(path, key string) string {
	values, err := procValues(path)
	v, ok := values[key]
	if err != nil || !ok {
		return ""
	}
	if kb, ok := strings.CutSuffix(v, " kB"); ok {
		var n int64
		if _, err := fmt.Sscan(kb, &n); err == nil {
			if n < 1<<20 {
				return fmt.Sprintf("%.0f MiB", float64(n)/(1<<10))
			}
			return fmt.Sprintf("%.1f GiB", float64(n)/(1<<20))
		}
	}
	return strings.Join(strings.Fields(v), " ")
}

// ProcBytes returns, in bytes and in the order of keys, the "key: N kB"
// lines of a /proc file, read once so that the sizes are of one moment,
// e.g. VmRSS and VmHWM of /proc/<pid>/status. A file that cannot be read
// (a process that has exited) gives the read's error.
func ProcBytes(path string, keys ...string) ([]int64, error) {
	values, err := procValues(path)
	if err != nil {
		return nil, err
	}
	sizes := make([]int64, len(keys))
	for i, key := range keys {
		v, ok := values[key]
		if !ok {
			return nil, fmt.Errorf("no %s in %s", key, path)
		}
		kb, ok := strings.CutSuffix(v, " kB")
		if !ok {
			return nil, fmt.Errorf("%s in %s is %q, not in kB", key, path, v)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(kb), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s in %s: %w", key, path, err)
		}
		sizes[i] = n << 10
	}
	return sizes, nil
}

// procValues are the trimmed values of a /proc file's "key: value" lines,
// by key (the first of each).
func procValues(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	values := map[string]string{}
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		k, v, ok := strings.Cut(scanner.Text(), ":")
		if !ok {
			continue
		}
		if k = strings.TrimSpace(k); values[k] == "" {
			values[k] = strings.TrimSpace(v)
		}
	}
	return values, scanner.Err()
}

// clockTicks is the kernel's USER_HZ, the unit of /proc/<pid>/stat's
// times: 100 on every Linux architecture Go supports.
const clockTicks = 100

// ProcCPUTime reads the CPU time (user and system) process pid has used so
// far from /proc/<pid>/stat.
func ProcCPUTime(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: count from after it.
	i := strings.LastIndexByte(string(data), ')')
	fields := strings.Fields(string(data)[i+1:])
	// utime and stime are fields 14 and 15 of the line, 12 and 13 after ")".
	if i < 0 || len(fields) < 13 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat: %q", pid, data)
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("unexpected /proc/%d/stat: %q", pid, data)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}
