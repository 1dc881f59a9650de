// Command hypershift-machine is the init of a machine of a NodePool of
// platform Pod (run, package boot): it runs containerd and the kubelet
// inside the machine's Pod, which join the hosted cluster as one of its
// nodes, and, with --pod-network-kubeconfig, the machine's part of the
// hosted cluster's pod network (package podnetwork). Command pod-network
// runs that part alone: the pod network's DaemonSet of the machines made
// before the machines ran it themselves.
package main

import (
	"fmt"
	"net/netip"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/hypershift-le/hypershift/hypershift-machine/boot"
	"github.com/hypershift-le/hypershift/hypershift-machine/podnetwork"
	"github.com/hypershift-le/hypershift/support/startup"
	"github.com/hypershift-le/hypershift/support/version"
)

func main() {
	root := &cobra.Command{
		Use:          "hypershift-machine",
		Short:        "Run a machine of a NodePool of platform Pod: containerd and a kubelet that joins the hosted cluster",
		SilenceUsage: true,
	}
	root.AddCommand(runCommand(), podNetworkCommand(), version.NewCommand("hypershift-machine"))
	if err := root.Execute(); err != nil {
		os.Exit(1)
	}
}

func runCommand() *cobra.Command {
	var (
		o                    boot.Options
		address              string
		podNetworkKubeconfig string
		clusterNetwork       string
	)
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Bring the machine up and supervise containerd and the kubelet until SIGTERM",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if address != "" {
				a, err := netip.ParseAddr(address)
				if err != nil {
					return fmt.Errorf("--address %q: %w", address, err)
				}
				o.Address = a
			}
			var agent *podnetwork.Agent
			if podNetworkKubeconfig != "" {
				var err error
				if agent, err = newAgent(podNetworkKubeconfig, o.Name, clusterNetwork); err != nil {
					return err
				}
			}
			ctx := ctrl.SetupSignalHandler()
			if agent != nil {
				// Its part of the pod network from the start: the Node is
				// Ready as soon as it has its pod subnet, with no pod to
				// schedule, pull and start on it first.
				go func() {
					if err := agent.Run(ctx); err != nil {
						agent.Log.Error(err, "The pod network stopped")
					}
				}()
			}
			return boot.Run(ctx, ctrl.Log.WithName("machine"), o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Name, "name", "", "The machine's name: its Node's name in the hosted cluster.")
	fs.StringVar(&address, "address", "", "The machine's address, where the hosted cluster reaches its kubelet.")
	fs.StringVar(&o.ProviderID, "provider-id", "", "The provider ID the kubelet registers its Node with.")
	fs.StringVar(&o.SandboxImage, "sandbox-image", "", "The pause image of the machine's pod sandboxes.")
	fs.StringSliceVar(&o.InsecureRegistries, "insecure-registries", nil, "Registry hosts reached over plain HTTP.")
	fs.StringToStringVar(&o.NodeLabels, "node-labels", nil, "Labels the kubelet registers its Node with.")
	fs.StringVar(&o.KubeletPath, "kubelet", "/usr/bin/kubelet", "The kubelet program.")
	fs.StringVar(&podNetworkKubeconfig, "pod-network-kubeconfig", "", "Run this machine's part of the hosted cluster's pod network (as pod-network does) with this kubeconfig; none when empty.")
	fs.StringVar(&clusterNetwork, "cluster-network", "", "With --pod-network-kubeconfig: the hosted cluster's pod network (its first IPv4 clusterNetwork CIDR).")
	logging := startup.LoggingFlags(fs)
	cmd.PreRun = func(*cobra.Command, []string) { startup.SetLogger(logging) }
	return cmd
}

// newAgent is the pod network's agent of Node nodeName, reading Nodes with
// kubeconfig, over the range clusterNetwork.
func newAgent(kubeconfig, nodeName, clusterNetwork string) (*podnetwork.Agent, error) {
	prefix, err := netip.ParsePrefix(clusterNetwork)
	if err != nil || !prefix.Addr().Is4() {
		return nil, fmt.Errorf("--cluster-network %q: want an IPv4 CIDR such as 10.132.0.0/14", clusterNetwork)
	}
	if nodeName == "" {
		return nil, fmt.Errorf("the pod network needs the machine's Node name")
	}
	config, err := startup.LoadConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	c, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	return &podnetwork.Agent{
		Client: c, NodeName: nodeName, ClusterNetwork: prefix, CNIConfigFile: podnetwork.CNIConfigFile, Log: ctrl.Log.WithName("pod-network"),
	}, nil
}

func podNetworkCommand() *cobra.Command {
	var kubeconfig, nodeName, clusterNetwork, cniConfigFile string
	cmd := &cobra.Command{
		Use:   "pod-network",
		Short: "Keep this machine's part of the hosted cluster's pod network: pod subnet, VXLAN routes to the other machines, masquerade",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if nodeName == "" {
				return fmt.Errorf("--node-name is required")
			}
			a, err := newAgent(kubeconfig, nodeName, clusterNetwork)
			if err != nil {
				return err
			}
			a.CNIConfigFile = cniConfigFile
			return a.Run(ctrl.SetupSignalHandler())
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&kubeconfig, "kubeconfig", "", "The hosted cluster's kubeconfig; in-cluster when empty.")
	fs.StringVar(&nodeName, "node-name", os.Getenv("NODE_NAME"), "This machine's Node ($NODE_NAME).")
	fs.StringVar(&clusterNetwork, "cluster-network", "", "The hosted cluster's pod network (its first clusterNetwork CIDR).")
	fs.StringVar(&cniConfigFile, "cni-config-file", podnetwork.CNIConfigFile, "Where the CNI configuration goes.")
	logging := startup.LoggingFlags(fs)
	cmd.PreRun = func(*cobra.Command, []string) { startup.SetLogger(logging) }
	return cmd
}
