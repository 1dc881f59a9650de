// Command control-plane-operator runs one hosted control plane's components,
// acting only while it holds the control plane's Lease.
package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/hypershift-le/hypershift/cmd/version"
)

func main() {
	root := &cobra.Command{
		Use:          "control-plane-operator",
		Short:        "Run a hosted control plane's components while holding its Lease",
		Example:      "  control-plane-operator version",
		SilenceUsage: true,
	}
	root.AddCommand(version.NewCommand())
	if err := root.Execute(); err != nil {
		os.Exit(1)
	}
}
