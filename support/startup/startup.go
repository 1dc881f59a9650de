// Package startup holds what the project's operator binaries share when
// they start: controller-runtime's zap logging flags (JSON by default),
// loading the kubeconfig, and waiting for the API server.
package startup

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// LoggingFlags registers controller-runtime's zap flags (--zap-devel,
// --zap-log-level, ...) on fs and returns the options they fill.
func LoggingFlags(fs *pflag.FlagSet) *zap.Options {
	// Timestamps in RFC 3339 with milliseconds, unless --zap-time-encoding
	// says otherwise; stack traces only for panics, unless
	// --zap-stacktrace-level says otherwise: an error's message says what
	// failed, and the stack of a reconcile error is controller-runtime's.
	opts := &zap.Options{TimeEncoder: zapcore.TimeEncoderOfLayout(TimeLayout), StacktraceLevel: zapcore.PanicLevel}
	goFlags := flag.NewFlagSet("zap", flag.ContinueOnError)
	opts.BindFlags(goFlags)
	fs.AddGoFlagSet(goFlags)
	return opts
}

// TimeLayout is the operators' log timestamp: RFC 3339 with milliseconds.
const TimeLayout = "2006-01-02T15:04:05.000Z07:00"

// SetLogger installs the logger the flags describe: structured JSON unless
// --zap-devel.
func SetLogger(opts *zap.Options) {
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(opts)))
}

// LoadConfig loads the kubeconfig at path, or, when path is empty,
// $KUBECONFIG, the in-cluster config, then ~/.kube/config. Either way,
// client-side rate limiting is off unless the kubeconfig sets a QPS, as
// controller-runtime does: the API server's priority and fairness shapes
// the traffic. (client-go's default of 5 requests/s would make an operator
// of 1,000 HostedClusters converge several times slower.)
func LoadConfig(path string) (*rest.Config, error) {
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
	if cfg.QPS == 0 {
		cfg.QPS = -1
	}
	return cfg, nil
}

// AddProbes serves /healthz and /readyz on every replica. Neither depends
// on leadership: a rollout that waited for a ready standby could otherwise
// never finish.
func AddProbes(mgr ctrl.Manager) error {
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("failed to add the health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return fmt.Errorf("failed to add the readiness check: %w", err)
	}
	return nil
}

// AwaitAPIServer calls ask until it succeeds, with a back-off from one
// second up to ten, logging why it waits: a process started while the API
// server is away waits for it instead of exiting (a restart would only wait
// longer, in back-off). It gives up only when ctx ends.
func AwaitAPIServer[T any](ctx context.Context, ask func() (T, error)) (T, error) {
	log := ctrl.LoggerFrom(ctx)
	delay := time.Second
	for {
		answer, err := ask()
		if err == nil {
			return answer, nil
		}
		log.Info("Waiting for the API server", "err", err.Error(), "retryIn", delay)
		select {
		case <-ctx.Done():
			return answer, fmt.Errorf("stopped while waiting for the API server: %w", err)
		case <-time.After(delay):
		}
		delay = min(2*delay, 10*time.Second)
	}
}

// Operator describes an operator's `run` command for RunCommand.
type Operator struct {
	// Name names the logger and the exit message.
	Name string
	// AddFlags registers the operator's options.
	AddFlags func(*pflag.FlagSet)
	// Validate refuses options the operator must not run with.
	Validate func() error
	// Run runs the operator until ctx ends; an error ends the process
	// with status 1.
	Run func(ctx context.Context, restConfig *rest.Config) error
}

// RunCommand completes cmd as an operator's `run` command: --kubeconfig
// and the logging flags beside the operator's own, and a RunE that sets up
// logging, validates the options, loads the kubeconfig and runs the
// operator with a context that ends on SIGTERM or SIGINT. A failure of Run
// is logged and ends the process with status 1 at once.
func RunCommand(cmd *cobra.Command, op Operator) *cobra.Command {
	var kubeconfig string
	fs := cmd.Flags()
	fs.StringVar(&kubeconfig, "kubeconfig", "", "Path to a kubeconfig; by default $KUBECONFIG, the in-cluster config, then ~/.kube/config.")
	op.AddFlags(fs)
	zapOpts := LoggingFlags(fs)
	cmd.Args = cobra.NoArgs
	cmd.RunE = func(_ *cobra.Command, _ []string) error {
		SetLogger(zapOpts)
		log := ctrl.Log.WithName(op.Name)
		if err := op.Validate(); err != nil {
			return err
		}
		restConfig, err := LoadConfig(kubeconfig)
		if err != nil {
			return err
		}
		if err := op.Run(ctrl.LoggerInto(ctrl.SetupSignalHandler(), log), restConfig); err != nil {
			log.Error(err, "Exiting: the "+op.Name+" lost or could not hold its Lease, or failed to run")
			os.Exit(1)
		}
		log.Info("Stopped")
		return nil
	}
	return cmd
}
