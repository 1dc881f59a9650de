package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hypershift-le/hypershift/test/bench/report"
	"github.com/hypershift-le/hypershift/test/operatorprocess"
)

// process is the hypershift-operator this command started: it dies with
// this command, and stop ends it with SIGTERM (then SIGKILL).
type process struct {
	*operatorprocess.Process
	name    string
	logPath string

	mu sync.Mutex
	// peakRSS is the largest VmRSS sampled, in bytes.
	peakRSS int64
}

// startProcess runs binary with args and extra environment variables,
// its output going to logPath.
func startProcess(name, binary string, args, environ []string, logPath string) (*process, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("failed to create the log of %s: %w", name, err)
	}
	proc, err := operatorprocess.Launch(binary, args, operatorprocess.Options{Env: environ, Output: logFile})
	if err != nil {
		_ = logFile.Close()
		return nil, err
	}
	go func() {
		<-proc.Done()
		_ = logFile.Close()
	}()
	return &process{Process: proc, name: name, logPath: logPath}, nil
}

// exited reports whether the process has ended, and its exit status.
func (p *process) exited() (bool, error) {
	select {
	case <-p.Done():
		return true, p.ExitErr()
	default:
		return false, nil
	}
}

// exitStatus is err, or "exit status 0" for a process that exited without
// error.
func exitStatus(err error) error {
	if err == nil {
		return errors.New("exit status 0")
	}
	return err
}

// memory reads the process's current (VmRSS) and peak (VmHWM) resident
// memory, in bytes, from /proc/<pid>/status.
func (p *process) memory() (rss, hwm int64, err error) { return procMemory(p.PID()) }

// procMemory reads process pid's current (VmRSS) and peak (VmHWM) resident
// memory, in bytes, from /proc/<pid>/status.
func procMemory(pid int) (rss, hwm int64, err error) {
	sizes, err := report.ProcBytes(fmt.Sprintf("/proc/%d/status", pid), "VmRSS", "VmHWM")
	if err != nil {
		return 0, 0, err
	}
	return sizes[0], sizes[1], nil
}

// cpuTime reads the CPU time (user and system) the process has used so far
// from /proc/<pid>/stat.
func (p *process) cpuTime() (time.Duration, error) { return report.ProcCPUTime(p.PID()) }

// sampleMemory records the peak VmRSS every interval until the process
// ends or stop is closed. VmHWM is the kernel's own peak; the samples are a
// cross-check, and what is left should the process be gone at the end.
func (p *process) sampleMemory(interval time.Duration, stop <-chan struct{}) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		if rss, _, err := p.memory(); err == nil {
			p.mu.Lock()
			p.peakRSS = max(p.peakRSS, rss)
			p.mu.Unlock()
		}
		select {
		case <-ticker.C:
		case <-stop:
			return
		case <-p.Done():
			return
		}
	}
}

func (p *process) sampledPeakRSS() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.peakRSS
}

// logTail returns the last n bytes of the process's output.
func (p *process) logTail(n int64) string {
	f, err := os.Open(p.logPath)
	if err != nil {
		return ""
	}
	defer func() { _ = f.Close() }()
	if info, err := f.Stat(); err == nil && info.Size() > n {
		_, _ = f.Seek(info.Size()-n, io.SeekStart)
	}
	data, _ := io.ReadAll(f)
	return string(data)
}

// freeAddress returns a 127.0.0.1 address nothing listens on right now.
func freeAddress() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String(), nil
}

// scrapeMetrics reads a Prometheus text endpoint into "name{labels}" ->
// value.
func scrapeMetrics(url string) (map[string]float64, error) {
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	metrics := map[string]float64{}
	scanner := bufio.NewScanner(resp.Body)
	scanner.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for scanner.Scan() {
		line := scanner.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		metrics[line[:i]] = v
	}
	return metrics, scanner.Err()
}

// metric sums the series of name whose labels hold every one of labels,
// and reports whether there was one.
func metric(m map[string]float64, name string, labels ...string) (float64, bool) {
	var sum float64
	found := false
	for series, v := range m {
		if series != name && !strings.HasPrefix(series, name+"{") {
			continue
		}
		ok := true
		for _, l := range labels {
			ok = ok && strings.Contains(series, l)
		}
		if ok {
			sum += v
			found = true
		}
	}
	return sum, found
}

// mib formats bytes as MiB.
func mib(bytes int64) string { return fmt.Sprintf("%.0f MiB", float64(bytes)/(1<<20)) }
