package localcluster

import (
	"context"
	"fmt"
	"path/filepath"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hypershift-le/hypershift/test/nodes"
)

// JoinOptions say how a node joins a cluster other than the local one: a
// worker of a hosted cluster.
type JoinOptions struct {
	// Name is the node's name.
	Name string
	// BootstrapKubeconfig reaches the joined cluster's API server, at an
	// address the node reaches, with a bootstrap token (TLS bootstrap).
	BootstrapKubeconfig []byte
	// ClientCA verifies the joined cluster's kube-apiserver when it calls
	// the kubelet (logs, exec).
	ClientCA []byte
	// Client is of the joined cluster: the node takes the pod subnet that
	// cluster's node IPAM gives its Node (a hosted cluster's
	// kube-controller-manager allocates them from its cluster network),
	// and is watched until Ready.
	Client client.Client
	// KubeletConfig is the joined cluster's part of the kubelet's
	// configuration (a drop-in over the node's own), as a NodePool's join
	// Secret holds it.
	KubeletConfig []byte
}

// JoinNode starts one more real node on the local cluster's network, joined
// to the cluster opts names, and returns once that cluster shows it Ready.
// It runs no kube-proxy of its own; it goes with the local cluster's Stop.
func (c *Cluster) JoinNode(ctx context.Context, opts JoinOptions) (*nodes.Node, error) {
	c.joinMu.Lock()
	i := c.opts.Nodes + c.joins // each join its own index, even when one fails
	c.joins++
	c.joinMu.Unlock()
	n, err := nodes.Start(ctx, c.host, opts.Client, nodes.Options{
		Name: opts.Name, Index: i, Network: nodes.DefaultNetwork,
		Dir: filepath.Join(c.opts.StateDir, "nodes", opts.Name), RunDir: fmt.Sprintf("/run/hsnode-%d", i),
		BinDir: c.opts.BinDir, CNIBinDir: cniBinDir,
		BootstrapKubeconfig: opts.BootstrapKubeconfig, ClientCA: opts.ClientCA,
		SandboxImage: c.Registry.Image("pause", "latest"), Registries: map[string]string{c.Registry.Host: "http://" + c.Registry.Host},
		KubeletConfigDropIn: opts.KubeletConfig, PodCIDRFromCluster: true,
	})
	if err != nil {
		return nil, err
	}
	c.joinMu.Lock()
	defer c.joinMu.Unlock()
	c.Joined = append(c.Joined, n)
	return n, nil
}
