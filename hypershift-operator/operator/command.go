package operator

import (
	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/hypershift-le/hypershift/support/startup"
)

// NewRunCommand returns `hypershift-operator run`.
func NewRunCommand() *cobra.Command {
	opts := DefaultOptions()
	var kubeconfig string
	var zapOpts *zap.Options
	cmd := &cobra.Command{
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
		Args: cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			startup.SetLogger(zapOpts)
			if err := opts.Validate(); err != nil {
				return err
			}
			restConfig, err := startup.LoadConfig(kubeconfig)
			if err != nil {
				return err
			}
			ctx := ctrl.LoggerInto(ctrl.SetupSignalHandler(), ctrl.Log.WithName("hypershift-operator"))
			return Run(ctx, restConfig, opts)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&kubeconfig, "kubeconfig", "", "Path to a kubeconfig; by default $KUBECONFIG, the in-cluster config, then ~/.kube/config.")
	opts.AddFlags(fs)
	zapOpts = startup.LoggingFlags(fs)
	return cmd
}
