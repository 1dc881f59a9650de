package version

import (
	"fmt"

	"github.com/spf13/cobra"
)

// NewCommand returns the `version` command of the binary named binary: it
// prints the build's version.
func NewCommand(binary string) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the version of this binary",
		Example: "  " + binary + " version",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), String())
			return err
		},
	}
}
