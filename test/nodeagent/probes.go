package nodeagent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// prober holds the HTTP client of every probe: no keep-alives and, like the
// kubelet's, no certificate verification.
type prober struct {
	client *http.Client
}

func newProber() *prober {
	transport := &http.Transport{
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the kubelet does not verify probe targets either
		DisableKeepAlives: true,
		Proxy:             nil,
	}
	return &prober{client: &http.Client{
		Transport: transport,
		CheckRedirect: func(_ *http.Request, via []*http.Request) error {
			if len(via) >= 10 {
				return errors.New("stopped after 10 redirects")
			}
			return nil
		},
	}}
}

const (
	startupProbe   = "startup"
	readinessProbe = "readiness"
	livenessProbe  = "liveness"
)

// runProbes probes one run of the container until its process exits or
// the pod stops: startup first, then readiness and liveness together.
func (c *containerRuntime) runProbes(proc *process) {
	ctx, cancel := context.WithCancel(c.pod.stopCtx)
	defer cancel()
	go func() {
		select {
		case <-proc.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	startedAt := time.Now()
	if probe := c.spec.StartupProbe; probe != nil {
		started := false
		c.watch(ctx, startupProbe, probe, startedAt, func(ok bool) bool {
			if ok {
				started = true
				c.setStarted(proc)
			} else {
				c.kill(startupProbe, probe, proc)
			}
			return true
		})
		if !started {
			return
		}
	}
	var wg sync.WaitGroup
	if probe := c.spec.ReadinessProbe; probe != nil {
		wg.Go(func() {
			c.watch(ctx, readinessProbe, probe, startedAt, func(ok bool) bool {
				c.setReady(proc, ok)
				return false
			})
		})
	}
	if probe := c.spec.LivenessProbe; probe != nil {
		wg.Go(func() {
			c.watch(ctx, livenessProbe, probe, startedAt, func(ok bool) bool {
				if !ok {
					c.kill(livenessProbe, probe, proc)
				}
				return !ok
			})
		})
	}
	wg.Wait()
}

// watch probes every period once the initial delay passed, and calls act
// with each result that reached its threshold (successThreshold or
// failureThreshold consecutive results) until act returns true or ctx ends.
func (c *containerRuntime) watch(ctx context.Context, kind string, probe *corev1.Probe, startedAt time.Time, act func(ok bool) bool) {
	period := time.Duration(max(probe.PeriodSeconds, 1)) * time.Second
	timeout := time.Duration(max(probe.TimeoutSeconds, 1)) * time.Second
	successes := max(probe.SuccessThreshold, 1)
	failures := probe.FailureThreshold
	if failures <= 0 {
		failures = 3
	}
	delay := time.Until(startedAt.Add(time.Duration(probe.InitialDelaySeconds) * time.Second))
	timer := time.NewTimer(max(delay, 0))
	defer timer.Stop()
	var (
		last *bool
		run  int32
	)
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		err := c.probeOnce(ctx, kind, probe, timeout)
		if ctx.Err() != nil {
			return
		}
		ok := err == nil
		if last != nil && *last == ok {
			run++
		} else {
			last, run = &ok, 1
		}
		if !ok {
			c.pod.log.V(1).Info("Probe failed", "container", c.spec.Name, "probe", kind, "error", err.Error(), "consecutive", run)
		}
		if (ok && run >= successes) || (!ok && run >= failures) {
			if act(ok) {
				return
			}
		}
		timer.Reset(period)
	}
}

// kill stops proc after a failed liveness or startup probe: SIGTERM, then
// SIGKILL after the grace period. The container then restarts as its
// policy says.
func (c *containerRuntime) kill(kind string, probe *corev1.Probe, proc *process) {
	grace := defaultGracePeriod
	if probe.TerminationGracePeriodSeconds != nil {
		grace = time.Duration(*probe.TerminationGracePeriodSeconds) * time.Second
	} else if s := c.pod.currentPod().Spec.TerminationGracePeriodSeconds; s != nil {
		grace = time.Duration(*s) * time.Second
	}
	c.pod.log.Info("Probe failed, killing the container", "container", c.spec.Name, "probe", kind, "pid", proc.pid, "gracePeriod", grace.String())
	go proc.terminate(grace)
}

// probeOnce runs one probe; handlers other than httpGet pass.
func (c *containerRuntime) probeOnce(ctx context.Context, kind string, probe *corev1.Probe, timeout time.Duration) error {
	if probe.HTTPGet == nil {
		c.pod.mu.Lock()
		warn := !c.warned[kind]
		c.warned[kind] = true
		c.pod.mu.Unlock()
		if warn {
			c.pod.log.Info("Only httpGet probes are run, this one passes", "container", c.spec.Name, "probe", kind)
		}
		return nil
	}
	return c.httpProbe(ctx, probe.HTTPGet, timeout)
}

func (c *containerRuntime) httpProbe(ctx context.Context, h *corev1.HTTPGetAction, timeout time.Duration) error {
	port, err := resolvePort(h.Port, c.spec)
	if err != nil {
		return err
	}
	host := h.Host
	if host == "" {
		host = c.pod.ip
	}
	scheme := strings.ToLower(string(h.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	path := h.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	url := scheme + "://" + net.JoinHostPort(host, strconv.Itoa(port)) + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("invalid probe URL %s: %w", url, err)
	}
	req.Header.Set("User-Agent", "kube-probe/nodeagent")
	req.Header.Set("Accept", "*/*")
	for _, header := range h.HTTPHeaders {
		if strings.EqualFold(header.Name, "Host") {
			req.Host = header.Value
			continue
		}
		req.Header.Add(header.Name, header.Value)
	}
	resp, err := c.pod.agent.prober.client.Do(req)
	if err != nil {
		return fmt.Errorf("probe GET %s failed: %w", url, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 10<<10))
	_ = resp.Body.Close()
	if resp.StatusCode < http.StatusOK || resp.StatusCode >= http.StatusBadRequest {
		return fmt.Errorf("probe GET %s returned %d", url, resp.StatusCode)
	}
	return nil
}

// resolvePort returns a probe's port number, looking named ports up in the
// container's ports.
func resolvePort(port intstr.IntOrString, c *corev1.Container) (int, error) {
	n := port.IntValue()
	if port.Type == intstr.String {
		n = 0
		for _, p := range c.Ports {
			if p.Name == port.StrVal {
				n = int(p.ContainerPort)
			}
		}
		if n == 0 {
			if parsed, err := strconv.Atoi(port.StrVal); err == nil {
				n = parsed
			}
		}
	}
	if n <= 0 || n > 65535 {
		return 0, fmt.Errorf("invalid probe port %q for container %s", port.String(), c.Name)
	}
	return n, nil
}
