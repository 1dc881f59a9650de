// Command hypershift is the project's CLI: it installs the hypershift-operator,
// creates and destroys hosted clusters, and shows who leads each one.
package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/hypershift-le/hypershift/cmd/version"
)

func main() {
	root := &cobra.Command{
		Use:           "hypershift",
		Short:         "Install the hypershift-operator and manage hosted control planes",
		Example:       "  hypershift version",
		SilenceUsage:  true,
		SilenceErrors: false,
	}
	root.AddCommand(version.NewCommand())
	if err := root.Execute(); err != nil {
		os.Exit(1)
	}
}
