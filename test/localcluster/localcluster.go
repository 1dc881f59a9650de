// Package localcluster runs the whole system on one machine: a real etcd,
// kube-apiserver (RBAC, ServiceAccount tokens, Pod Security admission,
// audit log), kube-controller-manager (the controllers of Controllers and
// NodeControllers) and kube-scheduler, real nodes (package nodes: each a
// kubelet with containerd in a network namespace of its own, kube-proxy,
// pods on CNI, NetworkPolicies' egress rules enforced by package
// networkpolicy), CoreDNS for cluster.local, a local-path provisioner, and a
// registry serving two release payloads and every image the system runs,
// built from the binaries in BinDir (package hack/images).
package localcluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hypershift-le/hypershift/test/nodes"
	"github.com/hypershift-le/hypershift/test/testenv"
)

// Controllers are the kube-controller-manager controllers the local
// cluster runs: Deployments, StatefulSets and Jobs (an EtcdBackup's) run
// for real, claims are bound by the PersistentVolume controller (and
// protected while in use), namespaces get their ServiceAccounts and CA
// bundle.
var Controllers = []string{
	"deployment-controller", "replicaset-controller", "statefulset-controller", "job-controller", "namespace-controller",
	"garbage-collector-controller", "serviceaccount-controller", "serviceaccount-token-controller",
	"clusterrole-aggregation-controller", "root-ca-certificate-publisher-controller",
	"persistentvolume-binder-controller", "persistentvolume-protection-controller",
	"persistentvolumeclaim-protection-controller",
}

// DefaultNodes is how many real nodes a local cluster runs unless told.
const DefaultNodes = 2

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
	// Nodes is how many real nodes run the pods (DefaultNodes when 0):
	// each a kubelet with containerd in a network namespace of its own,
	// kube-proxy, pods on CNI, CoreDNS for cluster.local and a local-path
	// provisioner, every image pulled from the registry. One set of real
	// nodes runs on a machine at a time.
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
	// Nodes are the real nodes.
	Nodes []*nodes.Node
	// Joined are the nodes JoinNode started, joined to other clusters.
	Joined []*nodes.Node
	joinMu sync.Mutex
	joins  int
	// Kubeconfig is a cluster-admin kubeconfig file.
	Kubeconfig string
	opts       Options
	host       *nodes.Host
	ownLock    *nodes.Lock
	// stopApprover ends the approval of the kubelets' serving
	// certificates, stopPolicies the enforcement of NetworkPolicies.
	stopApprover, stopPolicies context.CancelFunc
}

// Start starts everything and returns once every node is Ready and the
// add-ons serve.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	opts.Nodes = cmp.Or(opts.Nodes, DefaultNodes)
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
	// The nodes and their pods reach the API server at the host's address
	// on their network, through the kubernetes Service too.
	host := nodes.DefaultNetwork.HostAddress().String()
	envOpts := testenv.Options{
		AuditLog:                     true,
		ControllerManager:            true,
		ControllerManagerControllers: append(slices.Clone(Controllers), NodeControllers...),
		ServiceAccountAdmission:      true,
		ServiceClusterIPRange:        nodes.ServiceRange,
		StateDir:                     filepath.Join(opts.StateDir, "control-plane"),
		BindAddress:                  "0.0.0.0",
		AdvertiseAddress:             host,
		ServingIPs:                   []string{host},
		NodeCertificates:             true,
		Scheduler:                    true,
	}
	env, err := testenv.Start(ctx, envOpts)
	if err != nil {
		return nil, err
	}
	c := &Cluster{Env: env, opts: opts}
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
	if err := c.startNodes(ctx); err != nil {
		return fail(err)
	}
	return c, nil
}

// Stop stops the control plane, the nodes (every process they run, and
// every change they made to the machine) and the registry, and removes the
// state unless asked to keep it.
func (c *Cluster) Stop() error {
	var errs []error
	if c.stopApprover != nil {
		c.stopApprover()
	}
	if c.stopPolicies != nil {
		c.stopPolicies()
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
	// The nodes and their pods pull from it, and the operators read
	// payloads from it, at the host's address on the nodes' network.
	_, port, _ := strings.Cut(address, ":")
	r, err := StartRegistry(ctx, "0.0.0.0:"+port, nodes.DefaultNetwork.HostAddress().String(), filepath.Join(c.opts.StateDir, "registry"))
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(file, []byte(r.Host+"\n"), 0o600); err != nil {
		return nil, errors.Join(fmt.Errorf("failed to record the registry's address: %w", err), r.Close())
	}
	return r, nil
}
