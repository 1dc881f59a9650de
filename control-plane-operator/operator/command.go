package operator

import (
	"os"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/hypershift-le/hypershift/support/startup"
)

// NewRunCommand returns `control-plane-operator run`.
func NewRunCommand() *cobra.Command {
	opts := DefaultOptions()
	var kubeconfig string
	var zapOpts *zap.Options
	cmd := &cobra.Command{
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
		Args: cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			startup.SetLogger(zapOpts)
			log := ctrl.Log.WithName("control-plane-operator")
			if err := opts.Validate(); err != nil {
				return err
			}
			restConfig, err := startup.LoadConfig(kubeconfig)
			if err != nil {
				return err
			}
			ctx := ctrl.LoggerInto(ctrl.SetupSignalHandler(), log)
			if err := Run(ctx, restConfig, opts); err != nil {
				log.Error(err, "Exiting: the control-plane-operator lost or could not hold its Lease, or failed to run")
				os.Exit(1)
			}
			log.Info("Stopped")
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&kubeconfig, "kubeconfig", "", "Path to a kubeconfig; by default $KUBECONFIG, the in-cluster config, then ~/.kube/config.")
	opts.AddFlags(fs)
	zapOpts = startup.LoggingFlags(fs)
	return cmd
}
