// Package localcluster runs the whole system on one machine without a
// container runtime: a real etcd, kube-apiserver (RBAC, ServiceAccount
// tokens, Pod Security admission, audit log, Services from a loopback
// range) and kube-controller-manager (the controllers of Controllers), a
// node agent that runs every Pod's containers as local processes under
// their own pod-bound ServiceAccount tokens, serves Services on their
// ClusterIPs and NodePorts and provisions claims from local directories
// (see package nodeagent for what a pod gets), and a registry serving two
// release payloads. A payload's images map to real programs (see resolve):
// the project's binaries and etcd, kube-apiserver, kube-controller-manager
// and kube-scheduler, all in BinDir.
package localcluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"

	"github.com/hypershift-le/hypershift/test/nodeagent"
	"github.com/hypershift-le/hypershift/test/nodes"
	"github.com/hypershift-le/hypershift/test/testenv"
)

// Controllers are the kube-controller-manager controllers the local
// cluster runs: Deployments and StatefulSets roll out for real, claims are
// bound by the PersistentVolume controller (and protected while in use),
// namespaces get their ServiceAccounts and CA bundle. The endpointslice
// controller is not among them: the EndpointSlice API refuses the pods'
// loopback addresses, so the node agent derives Service endpoints itself.
var Controllers = []string{
	"deployment-controller", "replicaset-controller", "statefulset-controller", "namespace-controller",
	"garbage-collector-controller", "serviceaccount-controller", "serviceaccount-token-controller",
	"clusterrole-aggregation-controller", "root-ca-certificate-publisher-controller",
	"persistentvolume-binder-controller", "persistentvolume-protection-controller",
	"persistentvolumeclaim-protection-controller",
}

// ServiceClusterIPRange is where the local cluster's Services get their
// ClusterIPs: loopback addresses the node agent can listen on without a
// network of its own.
const ServiceClusterIPRange = "127.200.0.0/16"

// NodeName is the local cluster's one node.
const NodeName = "local-node"

// Options configure a local cluster.
type Options struct {
	// BinDir holds hypershift-operator and control-plane-operator, and the
	// programs of the payload's images: etcd, kube-apiserver,
	// kube-controller-manager and kube-scheduler.
	BinDir string
	// StateDir holds the cluster's state: the control plane's data (etcd,
	// CA, ServiceAccount signing key), the node's (pod logs, pod
	// directories, provisioned volumes), the registry's address and the
	// kubeconfig.
	StateDir string
	// KeepState keeps StateDir when the cluster stops, and makes Start
	// carry on from what a kept StateDir holds: the same objects, claims and
	// their data, CA and registry address. Without it, Start begins with an
	// empty StateDir and Stop removes it.
	KeepState bool
	// ServiceClusterIPRange and AddressPrefix are where Services and pods
	// get their loopback addresses; the zero values mean
	// ServiceClusterIPRange and 127.1.0.0/16. Local clusters that run at the
	// same time on one machine need ranges of their own.
	ServiceClusterIPRange string
	AddressPrefix         netip.Prefix
	// ImageBinaries maps an exact image pull spec to a binary, ahead of the
	// default mapping (e.g. a test-only build of an operator).
	ImageBinaries map[string]string
	// Log receives the node agent's log.
	Log logr.Logger
	// Nodes, when set, is how many real nodes run the pods instead of the
	// node agent (package nodes): each a kubelet with containerd in a
	// network namespace of its own, kube-proxy, pods on CNI, CoreDNS for
	// cluster.local and a local-path provisioner, every image pulled from
	// the registry. One set of real nodes runs on a machine at a time.
	Nodes int
	// WaitForNodes is how long Start waits for another cluster's real
	// nodes to stop (none: it fails at once, naming that cluster's process).
	WaitForNodes time.Duration
	// NodesLock, when set, is the machine's lock on real nodes, taken by
	// the caller (to look at the machine before and after), who releases
	// it; otherwise Start takes it and Stop releases it.
	NodesLock *nodes.Lock
}

// Cluster is a running local cluster.
type Cluster struct {
	Env      *testenv.Env
	Registry *Registry
	Agent    *nodeagent.Agent
	// Nodes are the real nodes, when Options.Nodes asks for them.
	Nodes []*nodes.Node
	// Kubeconfig is a cluster-admin kubeconfig file.
	Kubeconfig string
	opts       Options
	stopAgent  context.CancelFunc
	agentDone  chan error
	host       *nodes.Host
	ownLock    *nodes.Lock
}

// Start starts everything and returns once the node is registered.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	for _, name := range []string{"hypershift-operator", "control-plane-operator", "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
		if _, err := os.Stat(filepath.Join(opts.BinDir, name)); err != nil {
			return nil, fmt.Errorf("%s is missing from %s (%w): run `make build testbin`", name, opts.BinDir, err)
		}
	}
	if !opts.KeepState {
		if err := os.RemoveAll(opts.StateDir); err != nil {
			return nil, fmt.Errorf("failed to remove the previous state %s: %w", opts.StateDir, err)
		}
	}
	if err := os.MkdirAll(opts.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("failed to create %s: %w", opts.StateDir, err)
	}
	envOpts := testenv.Options{
		AuditLog:                     true,
		ControllerManager:            true,
		ControllerManagerControllers: Controllers,
		ServiceAccountAdmission:      true,
		ServiceClusterIPRange:        cmp.Or(opts.ServiceClusterIPRange, ServiceClusterIPRange),
		StateDir:                     filepath.Join(opts.StateDir, "control-plane"),
	}
	if opts.Nodes > 0 {
		// The nodes and their pods reach the API server at the host's
		// address on their network, through the kubernetes Service too.
		host := nodes.DefaultNetwork.HostAddress().String()
		envOpts.BindAddress, envOpts.AdvertiseAddress, envOpts.ServingIPs = "0.0.0.0", host, []string{host}
		envOpts.ServiceClusterIPRange = nodes.ServiceRange
		envOpts.ControllerManagerControllers = append(append([]string{}, Controllers...), NodeControllers...)
		envOpts.KubeletClient, envOpts.Scheduler = true, true
	}
	env, err := testenv.Start(ctx, envOpts)
	if err != nil {
		return nil, err
	}
	c := &Cluster{Env: env, opts: opts, agentDone: make(chan error, 1)}
	fail := func(err error) (*Cluster, error) {
		return nil, errors.Join(err, c.Stop())
	}
	c.Kubeconfig = filepath.Join(opts.StateDir, "kubeconfig")
	if err := env.WriteKubeconfig(c.Kubeconfig); err != nil {
		return fail(err)
	}
	if c.Registry, err = c.startRegistry(ctx); err != nil {
		return fail(err)
	}
	if opts.Nodes > 0 {
		if err := c.startNodes(ctx); err != nil {
			return fail(err)
		}
		return c, nil
	}
	c.Agent, err = nodeagent.New(nodeagent.Config{
		RESTConfig:       env.Config,
		NodeName:         NodeName,
		Resolve:          c.resolve,
		StateDir:         filepath.Join(opts.StateDir, "node"),
		Log:              opts.Log,
		AddressPrefix:    opts.AddressPrefix,
		ServiceProxy:     true,
		ProvisionVolumes: true,
	})
	if err != nil {
		return fail(err)
	}
	agentCtx, cancel := context.WithCancel(context.Background())
	c.stopAgent = cancel
	go func() { c.agentDone <- c.Agent.Run(agentCtx) }()
	if err := c.awaitNode(ctx); err != nil {
		return fail(err)
	}
	return c, nil
}

func (c *Cluster) awaitNode(ctx context.Context) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		node := &corev1.Node{}
		if err := c.Env.Client.Get(ctx, clientKey(NodeName), node); err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("node %s was not registered within 30s", NodeName)
}

// Stop stops the node agent (and every process it runs), the registry and
// the control plane, and removes the state unless asked to keep it.
func (c *Cluster) Stop() error {
	var errs []error
	if c.stopAgent != nil {
		c.stopAgent()
		select {
		case err := <-c.agentDone:
			if err != nil && !errors.Is(err, context.Canceled) {
				errs = append(errs, err)
			}
		case <-time.After(30 * time.Second):
			errs = append(errs, errors.New("the node agent did not stop within 30s"))
		}
	}
	// The control plane stops first, while the nodes and their pods are
	// there to see their connections closed: a peer whose network is gone
	// sends no reset, and the API server would wait for it.
	if c.Env != nil {
		errs = append(errs, c.Env.Stop())
	}
	if c.host != nil {
		// Every process, mount, namespace, link and sysctl the nodes
		// changed, by the record the host keeps.
		errs = append(errs, c.host.Close())
	}
	errs = append(errs, c.ownLock.Release())
	if c.Registry != nil {
		errs = append(errs, c.Registry.Close())
	}
	if !c.opts.KeepState {
		errs = append(errs, os.RemoveAll(c.opts.StateDir))
	}
	return errors.Join(errs...)
}

// startRegistry starts the registry, on the address a kept state
// recorded (the objects it kept name images there), else on a free port,
// and records it.
func (c *Cluster) startRegistry(ctx context.Context) (*Registry, error) {
	file := filepath.Join(c.opts.StateDir, "registry-address")
	address := "127.0.0.1:0"
	if raw, err := os.ReadFile(file); err == nil && c.opts.KeepState {
		address = strings.TrimSpace(string(raw))
	}
	host, blobs := "", ""
	if c.opts.Nodes > 0 {
		// The nodes and their pods pull from it, and the operators read
		// payloads from it, at the host's address on the nodes' network.
		_, port, _ := strings.Cut(address, ":")
		address, host = "0.0.0.0:"+port, nodes.DefaultNetwork.HostAddress().String()
		blobs = filepath.Join(c.opts.StateDir, "registry")
	}
	r, err := StartRegistry(ctx, address, host, blobs)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(file, []byte(r.Host+"\n"), 0o600); err != nil {
		return nil, errors.Join(fmt.Errorf("failed to record the registry's address: %w", err), r.Close())
	}
	return r, nil
}

// PodLogPath is the file the node agent writes a container's output to.
func (c *Cluster) PodLogPath(namespace, pod, container string) string {
	return filepath.Join(c.opts.StateDir, "node", "logs", namespace+"_"+pod+"_"+container+".log")
}
