package nodeagent

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// initialBackoff and maxBackoff bound the wait before a restart.
	initialBackoff = time.Second
	maxBackoff     = 30 * time.Second
	// backoffReset: a container that ran this long restarts at once again.
	backoffReset = time.Minute
)

// errStopping says the pod stops: the container must not start.
var errStopping = errors.New("the pod is stopping")

// ErrImagePull is what Config.Resolve wraps when a container's image maps
// to no local program: the container then waits with reason ErrImagePull,
// as with a kubelet that cannot pull the image.
var ErrImagePull = errors.New("image not found")

// waitingError keeps a container waiting, with a reason for its status.
type waitingError struct {
	reason  string
	message string
}

func (e *waitingError) Error() string { return e.reason + ": " + e.message }

// containerRuntime runs one container of a pod, restarting its process as
// the pod's restart policy says. Its state is guarded by pod.mu.
type containerRuntime struct {
	pod     *podRuntime
	spec    *corev1.Container
	logPath string

	state        corev1.ContainerState
	lastState    corev1.ContainerState
	containerID  string
	ready        bool
	started      bool
	restartCount int32
	// proc is the running process, nil between runs.
	proc *process
	// everRan: a run ended, so the next start is a restart.
	everRan bool
	// everStarted: a process started once; the pod may be Running.
	everStarted bool
	// final: the container ended for good under the restart policy.
	final bool
	// warned holds the probe kinds whose handler was reported unsupported.
	warned map[string]bool
}

func newContainerRuntime(p *podRuntime, spec *corev1.Container) *containerRuntime {
	return &containerRuntime{
		pod:     p,
		spec:    spec,
		logPath: filepath.Join(p.agent.logDir, fmt.Sprintf("%s_%s_%s.log", p.namespace, p.name, spec.Name)),
		state:   corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}},
		warned:  map[string]bool{},
	}
}

// run starts the container and restarts it after it exits, with an
// exponential back-off, until the pod stops or the restart policy says no.
func (c *containerRuntime) run() {
	backoff := initialBackoff
	for {
		proc, err := c.start()
		if errors.Is(err, errStopping) {
			return
		}
		var waiting *waitingError
		switch {
		case errors.As(err, &waiting):
			c.pod.log.Info("Container cannot start", "container", c.spec.Name, "reason", waiting.reason, "message", waiting.message)
			c.setWaiting(waiting.reason, waiting.message)
		case err != nil:
			c.pod.log.Error(err, "Container failed to start", "container", c.spec.Name)
			now := metav1.Now().Rfc3339Copy()
			c.setTerminated(128, "StartError", err.Error(), now, now)
		default:
			began := time.Now()
			c.pod.containerWG.Go(func() { c.runProbes(proc) })
			<-proc.done
			c.pod.log.Info("Container exited", "container", c.spec.Name, "pid", proc.pid, "exitCode", proc.exitCode)
			c.exited(proc)
			if time.Since(began) >= backoffReset {
				backoff = initialBackoff
			}
		}
		if waiting == nil {
			// A run ended: restart it, or not, as the policy says.
			if c.pod.isStopping() || !c.shouldRestart() {
				c.setFinal()
				return
			}
			c.setWaiting("CrashLoopBackOff", fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)",
				backoff, c.spec.Name, c.pod.name, c.pod.namespace, c.pod.uid))
		}
		timer := time.NewTimer(backoff)
		select {
		case <-c.pod.stopCh:
			timer.Stop()
			return
		case <-timer.C:
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// start sets up the pod's volumes, then resolves and starts the
// container's process.
func (c *containerRuntime) start() (*process, error) {
	p := c.pod
	pod := p.currentPod()
	if p.ipErr != nil {
		return nil, &waitingError{reason: "CreatePodSandboxError", message: p.ipErr.Error()}
	}
	if err := p.volumes.sync(p.stopCtx, pod); err != nil {
		return nil, &waitingError{reason: "FailedMount", message: err.Error()}
	}
	kubeconfig := ""
	if p.token != nil {
		if err := p.token.ensure(p.stopCtx); err != nil {
			return nil, &waitingError{reason: "ContainerCreating", message: err.Error()}
		}
		kubeconfig = p.token.path
	}
	path, argv, env, binds, err := c.commandLine(pod, kubeconfig)
	if err != nil {
		return nil, err
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopping {
		return nil, errStopping
	}
	proc, err := startProcess(p.agent.launcher(binds), path, argv, env.environ(), p.dir, c.logPath)
	if err != nil {
		return nil, err
	}
	if c.everRan {
		c.restartCount++
	}
	if c.state.Terminated != nil {
		c.lastState = c.state
	}
	c.proc = proc
	c.containerID = fmt.Sprintf("process://%d", proc.pid)
	c.state = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now().Rfc3339Copy()}}
	c.everStarted = true
	c.started = c.spec.StartupProbe == nil
	c.ready = c.started && c.spec.ReadinessProbe == nil
	p.log.Info("Container started", "container", c.spec.Name, "pid", proc.pid, "path", path, "restartCount", c.restartCount)
	p.poke()
	return proc, nil
}

// commandLine computes what the container runs: its environment, its
// command and args expanded, with listen addresses, paths under its
// volume mounts and the host names of its hostAliases rewritten, resolved to a local program; and the bind mounts
// its process gets in a mount namespace of its own, if any.
func (c *containerRuntime) commandLine(pod *corev1.Pod, kubeconfig string) (string, []string, *envList, []bindMount, error) {
	p := c.pod
	env, err := containerEnv(pod, c.spec, p.ip, p.dir, kubeconfig, p.agent.serviceEnv(pod))
	if err != nil {
		return "", nil, nil, nil, &waitingError{reason: "CreateContainerConfigError", message: err.Error()}
	}
	mounts, err := p.volumes.mountPoints(c.spec, env)
	if err != nil {
		return "", nil, nil, nil, &waitingError{reason: "CreateContainerConfigError", message: err.Error()}
	}
	aliases := hostAliases(pod)
	command := rewriteAllHostAliases(rewriteAllPaths(rewriteListenArgs(expandAll(c.spec.Command, env.lookup), p.ip), mounts), aliases)
	args := rewriteAllHostAliases(rewriteAllPaths(rewriteListenArgs(expandAll(c.spec.Args, env.lookup), p.ip), mounts), aliases)
	env.rewritePaths(mounts)
	env.rewriteHostAliases(aliases)
	view := pod.DeepCopy()
	view.Status.PodIP, view.Status.PodIPs = p.ip, []corev1.PodIP{{IP: p.ip}}
	view.Status.HostIP, view.Status.HostIPs = hostIP, []corev1.HostIP{{IP: hostIP}}
	path, argv, err := p.agent.cfg.Resolve(view, c.spec.DeepCopy(), command, args)
	if errors.Is(err, ErrImagePull) {
		return "", nil, nil, nil, &waitingError{reason: "ErrImagePull", message: err.Error()}
	}
	if err != nil {
		return "", nil, nil, nil, &waitingError{reason: "CreateContainerError", message: err.Error()}
	}
	return path, rewriteListenArgs(argv, p.ip), env, p.agent.bindMounts(mounts), nil
}

// shouldRestart applies the pod's restart policy to the last run.
func (c *containerRuntime) shouldRestart() bool {
	p := c.pod
	p.mu.Lock()
	defer p.mu.Unlock()
	switch p.pod.Spec.RestartPolicy {
	case corev1.RestartPolicyNever:
		return false
	case corev1.RestartPolicyOnFailure:
		return c.state.Terminated == nil || c.state.Terminated.ExitCode != 0
	}
	return true
}

func (c *containerRuntime) setWaiting(reason, message string) {
	p := c.pod
	p.mu.Lock()
	defer p.mu.Unlock()
	if c.state.Terminated != nil {
		c.lastState = c.state
	}
	c.state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}
	p.poke()
}

// setTerminated records a run that ended without a process (a start error).
func (c *containerRuntime) setTerminated(code int32, reason, message string, startedAt, finishedAt metav1.Time) {
	p := c.pod
	p.mu.Lock()
	defer p.mu.Unlock()
	c.state = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: code, Reason: reason, Message: message, StartedAt: startedAt, FinishedAt: finishedAt,
	}}
	c.ready, c.started, c.everRan = false, false, true
	p.poke()
}

// exited records the end of proc's run.
func (c *containerRuntime) exited(proc *process) {
	p := c.pod
	p.mu.Lock()
	defer p.mu.Unlock()
	var startedAt metav1.Time
	if c.state.Running != nil {
		startedAt = c.state.Running.StartedAt
	}
	reason := "Completed"
	if proc.exitCode != 0 {
		reason = "Error"
	}
	c.state = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode:    proc.exitCode,
		Reason:      reason,
		StartedAt:   startedAt,
		FinishedAt:  metav1.NewTime(proc.finishedAt).Rfc3339Copy(),
		ContainerID: c.containerID,
	}}
	c.proc = nil
	c.ready, c.started, c.everRan = false, false, true
	p.poke()
}

func (c *containerRuntime) setFinal() {
	c.pod.mu.Lock()
	defer c.pod.mu.Unlock()
	c.final = !c.pod.stopping
	c.pod.poke()
}

// setReady records a readiness result for proc's run.
func (c *containerRuntime) setReady(proc *process, ready bool) {
	p := c.pod
	p.mu.Lock()
	defer p.mu.Unlock()
	if c.proc != proc || !c.started || c.ready == ready {
		return
	}
	c.ready = ready
	p.poke()
}

// setStarted records that proc's startup probe succeeded.
func (c *containerRuntime) setStarted(proc *process) {
	p := c.pod
	p.mu.Lock()
	defer p.mu.Unlock()
	if c.proc != proc || c.started {
		return
	}
	c.started = true
	c.ready = c.spec.ReadinessProbe == nil
	p.poke()
}
