// Package get provides the `get` command of the hypershift CLI, which reads
// and shows state from the management cluster without changing anything.
// Its `leaders` subcommand shows which pod holds the leader-election Lease of
// the hypershift-operator and of each hosted cluster's control-plane-operator.
package get

import (
	"io"
	"time"

	"github.com/spf13/cobra"
)

// NewCommand returns the `get` command and its subcommands.
func NewCommand() *cobra.Command {
	return newCommand(time.Now, nil)
}

// newCommand builds the `get` command with a clock and an output writer
// tests can fix; a nil out means the command's standard output.
func newCommand(now func() time.Time, out io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "get",
		Short: "Show the state of the hypershift-operator and hosted clusters",
		Example: `  # Show who leads the hypershift-operator and each hosted control plane
  hypershift get leaders --all-namespaces`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		},
	}
	cmd.AddCommand(newLeadersCommand(now, out))
	return cmd
}
