package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sync"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// Config configures an Agent.
type Config struct {
	// RESTConfig holds the agent's own credentials (admin). Processes never
	// see them: they get a token of their ServiceAccount.
	RESTConfig *rest.Config
	// NodeName names the Node the agent registers and runs Pods for.
	NodeName string
	// Resolve returns the executable and argv (without argv[0]) to run for
	// a container, given the pod, the container, and its command/args
	// already expanded ($(VAR) references resolved from env) and with their
	// addresses and paths rewritten (see the package documentation). The
	// pod's status.podIP already holds the Pod's address. An error keeps
	// the container waiting, with reason ErrImagePull when it wraps
	// ErrImagePull, else CreateContainerError, and the error as message;
	// the agent tries again with a back-off.
	Resolve func(pod *corev1.Pod, c *corev1.Container, command, args []string) (path string, argv []string, err error)
	// StateDir is where logs (logs/<namespace>_<pod>_<container>.log),
	// per-pod directories (pods/, each a process's HOME, holding its
	// volumes) and the provisioned volumes (volumes/) go.
	StateDir string
	// Log receives the agent's own log; the zero value discards it.
	Log logr.Logger
	// AddressPrefix is where pod IPs are allocated from, one distinct
	// loopback address per pod; the zero value means 127.1.0.0/16.
	AddressPrefix netip.Prefix
	// ServiceProxy makes the agent serve the cluster's Services on their
	// ClusterIPs and NodePorts, as kube-proxy does. The machine's network is
	// shared: one agent per machine at most.
	ServiceProxy bool
	// ProvisionVolumes makes the agent the provisioner of the default
	// StorageClass LocalPathStorageClass. One agent per cluster at most.
	ProvisionVolumes bool
	// NoMountNamespaces keeps every process in the agent's mount namespace:
	// pods then get a kubeconfig instead of the in-cluster configuration at
	// its fixed path (see the package documentation).
	NoMountNamespaces bool
}

// Agent is a node agent. Create it with New, run it with Run.
type Agent struct {
	cfg    Config
	log    logr.Logger
	client kubernetes.Interface
	ips    *ipAllocator
	prober *prober
	sched  *scheduler
	logDir string
	podDir string
	pvDir  string
	// mountNamespaces: processes can get a mount namespace of their own.
	mountNamespaces bool

	// ctx is Run's context, for the pods' API calls.
	ctx context.Context

	mu         sync.Mutex
	started    bool
	stopping   bool
	lister     listersv1.PodLister
	secrets    listersv1.SecretLister
	configMaps listersv1.ConfigMapLister
	services   listersv1.ServiceLister
	claims     listersv1.PersistentVolumeClaimLister
	volumes    listersv1.PersistentVolumeLister
	pods       map[types.UID]*podRuntime
	// finished remembers pods whose runtime ended, until the API forgets
	// them too, so that a late event does not start them again.
	finished map[types.UID]bool
	wg       sync.WaitGroup
	// kubeletVersion is reported in the Node's nodeInfo.
	kubeletVersion string
}

// New checks the configuration and prepares the state directory.
func New(cfg Config) (*Agent, error) {
	switch {
	case cfg.RESTConfig == nil:
		return nil, errors.New("nodeagent: RESTConfig is required")
	case cfg.NodeName == "":
		return nil, errors.New("nodeagent: NodeName is required")
	case cfg.Resolve == nil:
		return nil, errors.New("nodeagent: Resolve is required")
	case cfg.StateDir == "":
		return nil, errors.New("nodeagent: StateDir is required")
	}
	if cfg.Log.GetSink() == nil {
		cfg.Log = logr.Discard()
	}
	if !cfg.AddressPrefix.IsValid() {
		cfg.AddressPrefix = netip.MustParsePrefix("127.1.0.0/16")
	}
	ips, err := newIPAllocator(cfg.AddressPrefix)
	if err != nil {
		return nil, err
	}
	restConfig := rest.CopyConfig(cfg.RESTConfig)
	restConfig.UserAgent = "nodeagent/" + cfg.NodeName
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("nodeagent: failed to create a client: %w", err)
	}
	a := &Agent{
		cfg:      cfg,
		log:      cfg.Log,
		client:   client,
		ips:      ips,
		prober:   newProber(),
		logDir:   filepath.Join(cfg.StateDir, "logs"),
		podDir:   filepath.Join(cfg.StateDir, "pods"),
		pvDir:    filepath.Join(cfg.StateDir, "volumes"),
		pods:     map[types.UID]*podRuntime{},
		finished: map[types.UID]bool{},
	}
	for _, dir := range []string{a.logDir, a.podDir, a.pvDir} {
		// 0o755: a pod's files must be readable by whatever user its
		// processes run as.
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("nodeagent: failed to create %s: %w", dir, err)
		}
	}
	if !cfg.NoMountNamespaces {
		if err := probeMountNamespaces(cfg.StateDir); err != nil {
			a.log.Info("Processes get no mount namespace: pods get a kubeconfig instead of the in-cluster configuration", "reason", err.Error())
		} else {
			a.mountNamespaces = true
		}
	}
	a.sched = newScheduler(a)
	return a, nil
}

// Run registers the Node, schedules Pods and runs those bound to the node.
// It blocks until ctx ends; then it stops every process (SIGTERM, then
// SIGKILL after 5s) and returns once they are all gone. The Pods stay in
// the API as they are. An Agent runs once.
func (a *Agent) Run(ctx context.Context) error {
	a.mu.Lock()
	if a.started {
		a.mu.Unlock()
		return errors.New("nodeagent: the agent already ran")
	}
	a.started = true
	a.ctx = ctx
	a.mu.Unlock()

	if err := a.registerNode(ctx); err != nil {
		a.shutdown()
		return err
	}
	factory := informers.NewSharedInformerFactory(a.client, 0)
	synced, err := a.watch(ctx, factory)
	if err != nil {
		a.shutdown()
		return err
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		factory.Shutdown()
		a.shutdown()
		return fmt.Errorf("nodeagent: the caches did not sync: %w", context.Cause(ctx))
	}
	a.removeStalePodDirs()
	a.log.Info("Node agent running", "node", a.cfg.NodeName, "mountNamespaces", a.mountNamespaces)

	a.goRun(func() { a.heartbeat(ctx) })
	a.goRun(func() { a.sched.run(ctx) })
	<-ctx.Done()

	a.sched.queue.ShutDown()
	factory.Shutdown()
	a.shutdown()
	a.log.Info("Node agent stopped", "node", a.cfg.NodeName)
	return nil
}

// goRun runs f in a goroutine that Run waits for.
func (a *Agent) goRun(f func()) {
	a.wg.Add(1)
	go func() { defer a.wg.Done(); f() }()
}

// shutdown stops every pod runtime and waits for them and the agent's
// other goroutines.
func (a *Agent) shutdown() {
	a.mu.Lock()
	a.stopping = true
	runtimes := make([]*podRuntime, 0, len(a.pods))
	for _, rt := range a.pods {
		runtimes = append(runtimes, rt)
	}
	a.mu.Unlock()
	for _, rt := range runtimes {
		rt.agentStopping()
	}
	a.wg.Wait()
}

// onPod sends a Pod to the scheduler when it has no node, or to its
// runtime when it is bound to this node.
func (a *Agent) onPod(oldObj, obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if old, ok := oldObj.(*corev1.Pod); ok && old.UID != pod.UID {
		// Deleted and created again under the same name between two looks.
		a.onPodDelete(old)
	}
	if pod.Spec.NodeName == "" {
		a.sched.enqueue(pod)
		return
	}
	if pod.Spec.NodeName != a.cfg.NodeName {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopping || a.finished[pod.UID] {
		return
	}
	if rt := a.pods[pod.UID]; rt != nil {
		rt.setPod(pod)
		return
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		// Finished before this agent started: nothing to run.
		return
	}
	rt := newPodRuntime(a, pod)
	a.pods[pod.UID] = rt
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		rt.run()
		a.mu.Lock()
		delete(a.pods, pod.UID)
		a.finished[pod.UID] = true
		a.mu.Unlock()
	}()
}

func (a *Agent) onPodDelete(obj any) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.finished, pod.UID)
	if rt := a.pods[pod.UID]; rt != nil {
		rt.setGone()
	}
}

// runtimeFor returns the runtime of the named pod, preferring one that is
// not terminating when an old and a new pod share the name.
func (a *Agent) runtimeFor(namespace, name string) *podRuntime {
	a.mu.Lock()
	defer a.mu.Unlock()
	var found *podRuntime
	for _, rt := range a.pods {
		if rt.namespace != namespace || rt.name != name {
			continue
		}
		if found == nil || !rt.isStopping() {
			found = rt
		}
	}
	return found
}

// PodPID returns the process ID of a container of a pod while it runs,
// for tests that kill it.
func (a *Agent) PodPID(namespace, name, container string) (int, bool) {
	rt := a.runtimeFor(namespace, name)
	if rt == nil {
		return 0, false
	}
	return rt.pid(container)
}

// PodIP returns the address allocated to a pod the agent runs.
func (a *Agent) PodIP(namespace, name string) (string, bool) {
	rt := a.runtimeFor(namespace, name)
	if rt == nil || rt.ip == "" {
		return "", false
	}
	return rt.ip, true
}
