// Package localcluster runs the whole system on one machine without a
// container runtime: a real etcd, kube-apiserver (RBAC, ServiceAccount
// tokens, Pod Security admission, audit log) and kube-controller-manager
// (deployment, replicaset, namespace, garbage-collector and serviceaccount
// controllers), a node agent that runs every Pod's containers as local
// processes under their own pod-bound ServiceAccount tokens, and a registry
// serving two release payloads. The project's images map to its binaries in
// bin/; components it does not ship (etcd, kube-apiserver, ... of the hosted
// control plane) run as bin/standin, which only answers their probes.
package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"

	"github.com/hypershift-le/hypershift/test/nodeagent"
	"github.com/hypershift-le/hypershift/test/testenv"
)

// Controllers are the kube-controller-manager controllers the local
// cluster runs: enough for Deployments to roll out for real.
var Controllers = []string{
	"deployment-controller", "replicaset-controller", "namespace-controller",
	"garbage-collector-controller", "serviceaccount-controller", "serviceaccount-token-controller",
	"clusterrole-aggregation-controller", "root-ca-certificate-publisher-controller",
}

// NodeName is the local cluster's one node.
const NodeName = "local-node"

// Options configure a local cluster.
type Options struct {
	// BinDir holds hypershift-operator, control-plane-operator and standin.
	BinDir string
	// StateDir holds logs, kubeconfigs and the audit log; removed by Stop
	// unless KeepState.
	StateDir  string
	KeepState bool
	// ImageBinaries maps an exact image pull spec to a binary, ahead of the
	// default mapping (e.g. a test-only build of an operator).
	ImageBinaries map[string]string
	// Log receives the node agent's log.
	Log logr.Logger
}

// Cluster is a running local cluster.
type Cluster struct {
	Env      *testenv.Env
	Registry *Registry
	Agent    *nodeagent.Agent
	// Kubeconfig is a cluster-admin kubeconfig file.
	Kubeconfig string
	opts       Options
	stopAgent  context.CancelFunc
	agentDone  chan error
}

// Start starts everything and returns once the node is registered.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	for _, name := range []string{"hypershift-operator", "control-plane-operator", "standin"} {
		if _, err := os.Stat(filepath.Join(opts.BinDir, name)); err != nil {
			return nil, fmt.Errorf("%s is missing from %s (%w): run `make build localbin`", name, opts.BinDir, err)
		}
	}
	if err := os.MkdirAll(opts.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("failed to create %s: %w", opts.StateDir, err)
	}
	env, err := testenv.Start(ctx, testenv.Options{
		AuditLog:                     true,
		ControllerManager:            true,
		ControllerManagerControllers: Controllers,
		ServiceAccountAdmission:      true,
	})
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
	if c.Registry, err = StartRegistry(ctx); err != nil {
		return fail(err)
	}
	c.Agent, err = nodeagent.New(nodeagent.Config{
		RESTConfig: env.Config,
		NodeName:   NodeName,
		Resolve:    c.resolve,
		StateDir:   filepath.Join(opts.StateDir, "node"),
		Log:        opts.Log,
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
	if c.Registry != nil {
		errs = append(errs, c.Registry.Close())
	}
	if c.Env != nil {
		errs = append(errs, c.Env.Stop())
	}
	if !c.opts.KeepState {
		errs = append(errs, os.RemoveAll(c.opts.StateDir))
	}
	return errors.Join(errs...)
}

// resolve maps a container to a local binary: the project's image runs the
// binary its command names; the hosted control plane's components run the
// stand-in, serving their ports and probes.
func (c *Cluster) resolve(pod *corev1.Pod, container *corev1.Container, command, args []string) (string, []string, error) {
	if path, ok := c.opts.ImageBinaries[container.Image]; ok {
		return path, args, nil
	}
	repo := container.Image
	if i := strings.LastIndex(repo, "@"); i >= 0 {
		repo = repo[:i]
	}
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo = repo[:i]
	}
	switch filepath.Base(repo) {
	case "hypershift":
		if len(command) == 0 {
			return "", nil, fmt.Errorf("image %s needs a command naming the binary", container.Image)
		}
		return filepath.Join(c.opts.BinDir, filepath.Base(command[0])), args, nil
	case "etcd", "hyperkube":
		return filepath.Join(c.opts.BinDir, "standin"), standinArgs(pod, container, command, args), nil
	}
	return "", nil, fmt.Errorf("image %s is not mapped to a local binary", container.Image)
}

// standinArgs tells the stand-in which ports to serve on the pod's own
// address, and with which scheme (HTTPS where a probe asks for it),
// followed by the component's own command line for the record.
func standinArgs(pod *corev1.Pod, container *corev1.Container, command, args []string) []string {
	https := map[string]bool{}
	for _, probe := range []*corev1.Probe{container.ReadinessProbe, container.LivenessProbe, container.StartupProbe} {
		if probe != nil && probe.HTTPGet != nil && probe.HTTPGet.Scheme == corev1.URISchemeHTTPS {
			https[probe.HTTPGet.Port.String()] = true
		}
	}
	var out []string
	for _, port := range container.Ports {
		scheme := "http"
		if https[port.Name] || https[fmt.Sprint(port.ContainerPort)] {
			scheme = "https"
		}
		out = append(out, fmt.Sprintf("--serve=%s://%s:%d", scheme, pod.Status.PodIP, port.ContainerPort))
	}
	out = append(out, "--")
	out = append(out, command...)
	return append(out, args...)
}

// PodLogPath is the file the node agent writes a container's output to.
func (c *Cluster) PodLogPath(namespace, pod, container string) string {
	return filepath.Join(c.opts.StateDir, "node", "logs", namespace+"_"+pod+"_"+container+".log")
}
