// Command hypershift-operator runs, for every HostedCluster, the control-plane
// namespace and a control-plane-operator rendered with leader election.
package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/hypershift-le/hypershift/hypershift-operator/operator"
	"github.com/hypershift-le/hypershift/support/version"
)

func main() {
	root := &cobra.Command{
		Use:          "hypershift-operator",
		Short:        "Reconcile HostedClusters into control-plane namespaces and control-plane-operators",
		Example:      "  hypershift-operator run --namespace=hypershift\n  hypershift-operator version",
		SilenceUsage: true,
	}
	root.AddCommand(operator.NewRunCommand(), version.NewCommand("hypershift-operator"))
	if err := root.Execute(); err != nil {
		os.Exit(1)
	}
}
