// Command hypershift-machine is the init of a machine of a NodePool of
// platform Pod (run, package boot): it runs containerd and the kubelet
// inside the machine's Pod, which join the hosted cluster as one of its
// nodes. On such machines, the hosted cluster's pod network runs it too
// (pod-network, package podnetwork).
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
		o       boot.Options
		address string
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
			ctx := ctrl.SetupSignalHandler()
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
	logging := startup.LoggingFlags(fs)
	cmd.PreRun = func(*cobra.Command, []string) { startup.SetLogger(logging) }
	return cmd
}

func podNetworkCommand() *cobra.Command {
	var (
		a              podnetwork.Agent
		kubeconfig     string
		clusterNetwork string
	)
	cmd := &cobra.Command{
		Use:   "pod-network",
		Short: "Keep this machine's part of the hosted cluster's pod network: pod subnet, VXLAN routes to the other machines, masquerade",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			prefix, err := netip.ParsePrefix(clusterNetwork)
			if err != nil || !prefix.Addr().Is4() {
				return fmt.Errorf("--cluster-network %q: want an IPv4 CIDR such as 10.132.0.0/14", clusterNetwork)
			}
			if a.NodeName == "" {
				return fmt.Errorf("--node-name is required")
			}
			config, err := startup.LoadConfig(kubeconfig)
			if err != nil {
				return err
			}
			if a.Client, err = kubernetes.NewForConfig(config); err != nil {
				return err
			}
			a.ClusterNetwork, a.Log = prefix, ctrl.Log.WithName("pod-network")
			return a.Run(ctrl.SetupSignalHandler())
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&kubeconfig, "kubeconfig", "", "The hosted cluster's kubeconfig; in-cluster when empty.")
	fs.StringVar(&a.NodeName, "node-name", os.Getenv("NODE_NAME"), "This machine's Node ($NODE_NAME).")
	fs.StringVar(&clusterNetwork, "cluster-network", "", "The hosted cluster's pod network (its first clusterNetwork CIDR).")
	fs.StringVar(&a.CNIConfigFile, "cni-config-file", podnetwork.CNIConfigFile, "Where the CNI configuration goes.")
	logging := startup.LoggingFlags(fs)
	cmd.PreRun = func(*cobra.Command, []string) { startup.SetLogger(logging) }
	return cmd
}
