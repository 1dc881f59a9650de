// Package startup holds what the project's operator binaries share when
// they start: controller-runtime's zap logging flags (JSON by default),
// loading the kubeconfig, and waiting for the API server.
package startup

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// LoggingFlags registers controller-runtime's zap flags (--zap-devel,
// --zap-log-level, ...) on fs and returns the options they fill.
func LoggingFlags(fs *pflag.FlagSet) *zap.Options {
	opts := &zap.Options{}
	goFlags := flag.NewFlagSet("zap", flag.ContinueOnError)
	opts.BindFlags(goFlags)
	fs.AddGoFlagSet(goFlags)
	return opts
}

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
