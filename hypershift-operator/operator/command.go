package operator

import (
	"context"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"

	"github.com/hypershift-le/hypershift/support/startup"
)

// NewRunCommand returns `hypershift-operator run`.
func NewRunCommand() *cobra.Command {
	opts := DefaultOptions()
	return startup.RunCommand(&cobra.Command{
		Use:   "run",
		Short: "Run the hypershift-operator",
		Long: `Run the hypershift-operator: for every HostedCluster it applies the control-plane
namespace, the HostedControlPlane and a control-plane-operator rendered with leader
election. With --leader-elect (the default) only the replica holding the
hypershift-operator-leader-elect Lease reconciles; losing the Lease ends the process.`,
		Example: `  # Run against the cluster in $KUBECONFIG, in namespace hypershift
  hypershift-operator run

  # Run with shorter control-plane-operator election timings
  hypershift-operator run --cpo-leader-elect-lease-duration=30s \
    --cpo-leader-elect-renew-deadline=20s --cpo-leader-elect-retry-period=5s`,
	}, startup.Operator{
		Name:     "hypershift-operator",
		AddFlags: opts.AddFlags,
		Validate: func() error { return opts.Validate() },
		Run:      func(ctx context.Context, restConfig *rest.Config) error { return Run(ctx, restConfig, opts) },
	})
}
