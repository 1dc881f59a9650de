package localcluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hypershift-le/hypershift/test/networkpolicy"
	"github.com/hypershift-le/hypershift/test/nodes"
)

// cniBinDir is where Debian's containernetworking-plugins are.
const cniBinDir = "/usr/lib/cni"

// NodeControllers are the controllers a cluster of real nodes runs beside
// Controllers: Services get EndpointSlices (kube-proxy serves them),
// DaemonSets run, pods of deleted nodes go, a node that stops reporting
// is marked so, and PodDisruptionBudgets get the status evictions (a
// drain) are judged by: without it every budget allows no disruption.
var NodeControllers = []string{"endpointslice-controller", "daemonset-controller", "pod-garbage-collector-controller", "node-lifecycle-controller", "disruption-controller"}

// nodeName is the name of node i.
func nodeName(i int) string { return fmt.Sprintf("node-%d", i) }

// startNodes pushes the images the nodes run and brings Options.Nodes real
// nodes up, each Ready, then the add-ons they serve the cluster with.
func (c *Cluster) startNodes(ctx context.Context) error {
	if err := nodes.CheckHost(c.opts.BinDir, cniBinDir); err != nil {
		return err
	}
	want := payloadSpecs()
	maps.Copy(want, addonImages)
	if err := c.Registry.Push(ctx, c.opts.BinDir, want); err != nil {
		return err
	}
	if c.opts.NodesLock == nil {
		lock, err := nodes.TakeLock(c.opts.WaitForNodes)
		if err != nil {
			return err
		}
		c.ownLock = lock
	}
	c.host = &nodes.Host{}
	network := nodes.DefaultNetwork
	if err := network.Up(c.host); err != nil {
		return err
	}
	if err := c.apply(ctx, append(nodeRoleBindings(), bootstrapRoleBindings()...)...); err != nil {
		return err
	}
	server := "https://" + c.APIServerOnNodes()
	token, err := c.newBootstrapToken(ctx, server)
	if err != nil {
		return err
	}
	bootstrapKubeconfig, err := nodes.Kubeconfig(server, token)
	if err != nil {
		return err
	}
	approverCtx, stopApprover := context.WithCancel(context.Background())
	c.stopApprover = stopApprover
	go c.approveServing(approverCtx)
	proxyUser, err := c.Env.AddUser("system:kube-proxy")
	if err != nil {
		return err
	}
	proxyKubeconfig, err := nodes.Kubeconfig(server, proxyUser)
	if err != nil {
		return err
	}
	registries := map[string]string{c.Registry.Host: "http://" + c.Registry.Host}
	// The nodes come up side by side, as a cloud's machines do.
	started := make([]*nodes.Node, c.opts.Nodes)
	errs := make([]error, c.opts.Nodes)
	var wg sync.WaitGroup
	for i := range c.opts.Nodes {
		name := nodeName(i)
		wg.Go(func() {
			started[i], errs[i] = nodes.Start(ctx, c.host, c.Env.Client, nodes.Options{
				Name: name, Index: i, Network: network,
				Dir: filepath.Join(c.opts.StateDir, "nodes", name), RunDir: fmt.Sprintf("/run/hsnode-%d", i),
				BinDir: c.opts.BinDir, CNIBinDir: cniBinDir,
				BootstrapKubeconfig: bootstrapKubeconfig, ProxyKubeconfig: proxyKubeconfig, ClientCA: c.Env.Config.CAData,
				SandboxImage: c.Registry.Image("pause", "latest"), Registries: registries, ClusterDNS: ClusterDNS,
			})
		})
	}
	wg.Wait()
	for _, n := range started {
		if n != nil {
			c.Nodes = append(c.Nodes, n)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := c.enforceNetworkPolicies(ctx); err != nil {
		return err
	}
	if err := c.apply(ctx, c.addons()...); err != nil {
		return err
	}
	return c.awaitAddons(ctx)
}

// nodeRoleBindings grant the nodes' kubelets and kube-proxies their
// built-in roles (the API server authorizes with RBAC only).
func nodeRoleBindings() []client.Object {
	return []client.Object{
		bindClusterRole("system:node", rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: "Group", Name: "system:nodes"}),
		bindClusterRole("system:node-proxier", rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: "User", Name: "system:kube-proxy"}),
	}
}

// bindClusterRole binds the ClusterRole role to subject.
func bindClusterRole(role string, subject rbacv1.Subject) client.Object {
	return &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: "localcluster:" + role},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{subject},
	}
}

// enforceNetworkPolicies keeps the egress rules of the cluster's
// NetworkPolicies on its nodes (package networkpolicy: the CNI bridge
// plugin enforces none) until Stop, and returns once the first rules are
// in place.
func (c *Cluster) enforceNetworkPolicies(ctx context.Context) error {
	e := &networkpolicy.Enforcer{Config: c.Env.Config, Nodes: map[string]string{}}
	for _, n := range c.Nodes {
		e.Nodes[n.Name] = n.Namespace
	}
	runCtx, stop := context.WithCancel(context.Background())
	c.stopPolicies = stop
	done := make(chan error, 1)
	go func() { done <- e.Run(runCtx) }()
	select {
	case <-e.Synced():
		return nil
	case err := <-done:
		return fmt.Errorf("failed to enforce NetworkPolicies on the nodes: %w", err)
	case <-time.After(time.Minute):
		err := e.LastError()
		if err == nil {
			err = errors.New("none applied yet")
		}
		return fmt.Errorf("the nodes' NetworkPolicy rules were not in place after a minute: %w", err)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// IsolationArgs are the hypershift-operator's flags (hypershift install's)
// that isolate the hosted clusters from this management cluster: the
// host's address (the API server, etcd, the registry), the nodes'
// addresses (their kubelets) and pod subnets, the Service range, and the
// registry the machines pull from. Nodes joined to hosted clusters
// (JoinNode) share the nodes' subnet but are the hosted clusters', not
// the management cluster's: their addresses are not in the list.
func (c *Cluster) IsolationArgs() []string {
	networks := []string{netip.PrefixFrom(nodes.DefaultNetwork.HostAddress(), 32).String(), nodes.ServiceRange}
	for _, n := range c.Nodes {
		networks = append(networks, n.Address+"/32", n.PodCIDR.String())
	}
	return []string{
		"--management-cluster-networks=" + strings.Join(networks, ","),
		"--machine-allowed-endpoints=" + c.Registry.Host,
	}
}
