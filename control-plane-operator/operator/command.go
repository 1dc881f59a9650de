package operator

import (
	"context"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"

	"github.com/hypershift-le/hypershift/support/startup"
)

// NewRunCommand returns `control-plane-operator run`.
func NewRunCommand() *cobra.Command {
	opts := DefaultOptions()
	return startup.RunCommand(&cobra.Command{
		Use:   "run",
		Short: "Run the control-plane-operator of one hosted control plane",
		Long: `Run the control-plane-operator: it renders the hosted control plane's components
in --namespace, but only while it holds the Lease named by
--leader-elect-resource-name; a standby serves health and metrics and writes nothing.
Losing the Lease ends the process with a non-zero status; SIGTERM stops the
controllers, waits for running reconciles, releases the Lease and exits 0, or,
when it finds that another pod took the Lease meanwhile, exits 1 naming it.`,
		Example: `  control-plane-operator run --namespace=clusters-demo --leader-elect=true \
    --leader-elect-lease-duration=60s --leader-elect-renew-deadline=40s \
    --leader-elect-retry-period=15s --leader-elect-resource-name=control-plane-operator-leader-elect`,
	}, startup.Operator{
		Name:     "control-plane-operator",
		AddFlags: opts.AddFlags,
		Validate: func() error { return opts.Validate() },
		Run:      func(ctx context.Context, restConfig *rest.Config) error { return Run(ctx, restConfig, opts) },
	})
}
