package operator

import (
	"flag"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// NewRunCommand returns `hypershift-operator run`.
func NewRunCommand() *cobra.Command {
	opts := DefaultOptions()
	var kubeconfig string
	zapOpts := zap.Options{}
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
			ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
			if err := opts.Validate(); err != nil {
				return err
			}
			restConfig, err := loadConfig(kubeconfig)
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
	goFlags := flag.NewFlagSet("zap", flag.ContinueOnError)
	zapOpts.BindFlags(goFlags)
	fs.AddGoFlagSet(goFlags)
	return cmd
}

// loadConfig loads the kubeconfig at path, or the default one when empty.
func loadConfig(path string) (*rest.Config, error) {
	if path == "" {
		cfg, err := ctrl.GetConfig()
		if err != nil {
			return nil, fmt.Errorf("failed to load a kubeconfig (set --kubeconfig or $KUBECONFIG): %w", err)
		}
		return cfg, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("failed to load kubeconfig %s: %w", path, err)
	}
	return cfg, nil
}
