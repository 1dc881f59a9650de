// Package version provides the `version` command every binary of the project
// has.
package version

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hypershift-le/hypershift/support/version"
)

// NewCommand returns a `version` command that prints the build's version.
func NewCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the version of this binary",
		Example: "  hypershift version",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), version.String())
			return err
		},
	}
}
