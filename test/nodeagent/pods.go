package nodeagent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

const (
	// defaultGracePeriod applies when a pod does not set one.
	defaultGracePeriod = 30 * time.Second
	// shutdownGracePeriod is what processes get when the agent stops.
	shutdownGracePeriod = 5 * time.Second
	// goneGracePeriod is what processes get when their pod vanished from
	// the API without waiting for them (a forced deletion).
	goneGracePeriod = 2 * time.Second
)

// podRuntime runs one pod: a worker goroutine (run) that owns its lifecycle
// and writes its status, and one goroutine per container.
type podRuntime struct {
	agent     *Agent
	uid       types.UID
	namespace string
	name      string
	// ip is the pod's address, fixed for its life; ipErr says why it has
	// none.
	ip    string
	ipErr error
	dir   string
	log   logr.Logger
	// token is nil when the pod gets no kubeconfig.
	token *tokenManager
	// volumes are the pod's volumes; volumesChanged tells their sync loop
	// that a source may have changed.
	volumes        *podVolumes
	volumesChanged chan struct{}

	// wake tells the worker that something changed.
	wake chan struct{}
	// stopCh closes when the containers must stop and not start again;
	// stopCtx ends then too, and with it probes and token requests.
	stopCh      chan struct{}
	stopCtx     context.Context
	cancelStop  context.CancelFunc
	containerWG sync.WaitGroup

	// mu guards the fields below and the containers' state.
	mu         sync.Mutex
	pod        *corev1.Pod
	gone       bool
	shutdown   bool
	stopping   bool
	startTime  metav1.Time
	containers []*containerRuntime

	// partitionedAs, set while the pod is cut off from the API server
	// (Agent.Partition), is the pod as the worker last saw it.
	partitionedAs *corev1.Pod
}

// newPodRuntime prepares a runtime; the caller holds a.mu.
func newPodRuntime(a *Agent, pod *corev1.Pod) *podRuntime {
	p := &podRuntime{
		agent:          a,
		uid:            pod.UID,
		namespace:      pod.Namespace,
		name:           pod.Name,
		dir:            filepath.Join(a.podDir, fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID)),
		log:            a.log.WithValues("pod", pod.Namespace+"/"+pod.Name),
		wake:           make(chan struct{}, 1),
		volumesChanged: make(chan struct{}, 1),
		stopCh:         make(chan struct{}),
		pod:            pod,
		startTime:      metav1.Now().Rfc3339Copy(),
	}
	if pod.Status.StartTime != nil {
		p.startTime = *pod.Status.StartTime
	}
	p.stopCtx, p.cancelStop = context.WithCancel(context.Background())
	p.ip, p.ipErr = a.ips.allocate(pod.Status.PodIP)
	p.volumes = newPodVolumes(p)
	// Where processes can find the in-cluster configuration at its fixed
	// path, they get no kubeconfig, as in any cluster.
	if !a.mountNamespaces && (pod.Spec.AutomountServiceAccountToken == nil || *pod.Spec.AutomountServiceAccountToken) {
		p.token = &tokenManager{
			agent: a, namespace: pod.Namespace, podName: pod.Name, podUID: pod.UID,
			serviceAccount: serviceAccountName(pod), path: filepath.Join(p.dir, "kubeconfig"),
		}
	}
	for i := range pod.Spec.Containers {
		p.containers = append(p.containers, newContainerRuntime(p, &pod.Spec.Containers[i]))
	}
	return p
}

// sourcesChanged tells the pod that a Secret, ConfigMap or claim it may
// use changed.
func (p *podRuntime) sourcesChanged() {
	select {
	case p.volumesChanged <- struct{}{}:
	default:
	}
}

// syncVolumes brings the volumes up to date when their sources change,
// when a token is due and every volumeResync, until the pod stops.
func (p *podRuntime) syncVolumes() {
	timer := time.NewTimer(volumeResync)
	defer timer.Stop()
	for {
		select {
		case <-p.stopCh:
			return
		case <-p.volumesChanged:
		case <-timer.C:
		}
		if err := p.volumes.sync(p.stopCtx, p.currentPod()); err != nil && p.stopCtx.Err() == nil {
			p.log.V(1).Info("Volumes not set up", "reason", err.Error())
		}
		wait := volumeResync
		if next := p.volumes.nextTokenRefresh(); !next.IsZero() {
			wait = min(wait, max(time.Until(next), time.Second))
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(wait)
	}
}

func (p *podRuntime) poke() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// setPod records a newer version of the pod object.
func (p *podRuntime) setPod(pod *corev1.Pod) {
	p.mu.Lock()
	if !olderThan(pod, p.pod) {
		p.pod = pod
	}
	p.mu.Unlock()
	p.poke()
}

// olderThan reports whether a's resourceVersion is before b's. Versions
// are opaque in general but integers with etcd; when they are not, every
// version counts as new.
func olderThan(a, b *corev1.Pod) bool {
	va, errA := strconv.ParseUint(a.ResourceVersion, 10, 64)
	vb, errB := strconv.ParseUint(b.ResourceVersion, 10, 64)
	return errA == nil && errB == nil && va < vb
}

func (p *podRuntime) setGone() {
	p.mu.Lock()
	p.gone = true
	p.mu.Unlock()
	p.poke()
}

func (p *podRuntime) agentStopping() {
	p.mu.Lock()
	p.shutdown = true
	p.mu.Unlock()
	p.poke()
}

func (p *podRuntime) isShutdown() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.shutdown && !p.gone
}

func (p *podRuntime) isStopping() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stopping
}

func (p *podRuntime) currentPod() *corev1.Pod {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pod
}

// pid returns the pid of a container's running process.
func (p *podRuntime) pid(container string) (int, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.containers {
		if c.spec.Name == container && c.proc != nil && !c.proc.exited() {
			return c.proc.pid, true
		}
	}
	return 0, false
}

// gracePeriod is how long the processes get between SIGTERM and SIGKILL.
func gracePeriod(pod *corev1.Pod, gone, shutdown bool) time.Duration {
	switch {
	case shutdown:
		return shutdownGracePeriod
	case gone:
		return goneGracePeriod
	case pod.DeletionGracePeriodSeconds != nil:
		return time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
	case pod.Spec.TerminationGracePeriodSeconds != nil:
		return time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second
	}
	return defaultGracePeriod
}

// run is the pod's worker: it starts the containers, writes the status when
// it changes, and on deletion stops the processes (SIGTERM, SIGKILL once the
// grace period ends), releases the address and deletes the pod.
func (p *podRuntime) run() {
	ctx := p.agent.ctx
	if err := os.MkdirAll(p.dir, 0o700); err != nil && p.ipErr == nil {
		p.ipErr = fmt.Errorf("failed to create the pod's directory: %w", err)
	}
	p.log.Info("Running pod", "ip", p.ip)
	pod := p.currentPod()
	if pod.DeletionTimestamp == nil {
		for _, c := range p.containers {
			p.containerWG.Go(c.run)
		}
		p.containerWG.Go(p.syncVolumes)
	}
	containersDone := make(chan struct{})
	go func() { p.containerWG.Wait(); close(containersDone) }()

	killTimer := time.NewTimer(time.Hour)
	killTimer.Stop()
	defer killTimer.Stop()
	var retry *time.Timer
	defer func() {
		if retry != nil {
			retry.Stop()
		}
	}()
	var (
		terminating, exited bool
		deadline            time.Time
		killC               <-chan time.Time
	)
	for {
		p.mu.Lock()
		pod, gone, shutdown := p.pod, p.gone, p.shutdown
		partitioned := p.partitionedAs != nil && !shutdown
		if partitioned {
			pod, gone = p.partitionedAs, false
		}
		p.mu.Unlock()
		if gone || shutdown || pod.DeletionTimestamp != nil {
			grace := gracePeriod(pod, gone, shutdown)
			if !terminating {
				terminating = true
				p.log.Info("Stopping pod", "gracePeriod", grace.String(), "gone", gone, "agentStopping", shutdown)
				p.stopContainers()
			}
			if d := time.Now().Add(grace); deadline.IsZero() || d.Before(deadline) {
				deadline = d
				killTimer.Reset(grace)
				killC = killTimer.C
			}
		}
		if terminating && exited {
			p.finish(ctx, !gone && !shutdown)
			return
		}
		if !gone && !shutdown && !partitioned {
			if wait := p.syncStatus(ctx, pod); wait > 0 {
				if retry != nil {
					retry.Stop()
				}
				retry = time.AfterFunc(wait, p.poke)
			}
		}
		select {
		case <-p.wake:
		case <-killC:
			killC = nil
			p.log.Info("Grace period over, killing processes")
			p.signalAll(syscall.SIGKILL)
		case <-containersDone:
			containersDone, exited = nil, true
		}
	}
}

// stopContainers keeps the containers from starting again and sends
// SIGTERM to their processes.
func (p *podRuntime) stopContainers() {
	p.mu.Lock()
	p.stopping = true
	p.mu.Unlock()
	close(p.stopCh)
	p.cancelStop()
	p.signalAll(syscall.SIGTERM)
}

func (p *podRuntime) signalAll(sig syscall.Signal) {
	p.mu.Lock()
	var procs []*process
	for _, c := range p.containers {
		if c.proc != nil {
			procs = append(procs, c.proc)
		}
	}
	p.mu.Unlock()
	for _, proc := range procs {
		proc.signal(sig)
	}
}

// finish runs once every process is gone: it releases what the pod held
// and, when asked, deletes the pod object at once, as a kubelet does. The
// pod's directory (its emptyDir volumes) stays when only the agent stops,
// for the pod to find again when the agent starts with the same state.
func (p *podRuntime) finish(ctx context.Context, deletePod bool) {
	p.cancelStop()
	p.agent.ips.release(p.ip)
	if !p.isShutdown() {
		if err := os.RemoveAll(p.dir); err != nil {
			p.log.Error(err, "Failed to remove the pod's directory")
		}
	}
	p.log.Info("Pod stopped", "deleting", deletePod)
	if !deletePod {
		return
	}
	opts := metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0)), Preconditions: &metav1.Preconditions{UID: &p.uid}}
	for attempt, wait := 0, 200*time.Millisecond; ; attempt, wait = attempt+1, wait*2 {
		err := p.agent.client.CoreV1().Pods(p.namespace).Delete(ctx, p.name, opts)
		if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) || ctx.Err() != nil {
			return
		}
		if attempt == 5 {
			p.log.Error(err, "Failed to delete the pod")
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// syncStatus writes the pod's status when it changed, and returns how long
// to wait before trying again when the write failed.
func (p *podRuntime) syncStatus(ctx context.Context, pod *corev1.Pod) time.Duration {
	p.mu.Lock()
	status := p.statusLocked(pod, metav1.Now().Rfc3339Copy())
	p.mu.Unlock()
	if apiequality.Semantic.DeepEqual(&pod.Status, status) {
		return 0
	}
	updated := pod.DeepCopy()
	updated.Status = *status
	result, err := p.agent.client.CoreV1().Pods(p.namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	switch {
	case err == nil:
		p.setPod(result)
		return 0
	case apierrors.IsNotFound(err) || ctx.Err() != nil:
		// The delete event follows.
		return 0
	case apierrors.IsConflict(err):
		// The informer brings the newer version; try again after it.
		return 200 * time.Millisecond
	default:
		p.log.Error(err, "Failed to update the pod's status")
		return time.Second
	}
}
