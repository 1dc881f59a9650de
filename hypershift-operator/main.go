// Command hypershift-operator runs, for every HostedCluster, the control-plane
// namespace and a control-plane-operator rendered with leader election.
package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/hypershift-le/hypershift/cmd/version"
)

func main() {
	root := &cobra.Command{
		Use:          "hypershift-operator",
		Short:        "Reconcile HostedClusters into control-plane namespaces and control-plane-operators",
		Example:      "  hypershift-operator version",
		SilenceUsage: true,
	}
	root.AddCommand(version.NewCommand())
	if err := root.Execute(); err != nil {
		os.Exit(1)
	}
}
