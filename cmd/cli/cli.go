// Package cli holds what every `hypershift` command shares: loading the
// kubeconfig, building clients that know the project's types, and turning
// errors into the one line a user reads.
package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hypershift-le/hypershift/support/scheme"
)

// FieldOwner is the server-side apply field manager of the CLI.
const FieldOwner = "hypershift-cli"

// KubeconfigFlags are the connection flags every command that talks to a
// cluster takes, as kubectl names them.
type KubeconfigFlags struct {
	// Kubeconfig is a kubeconfig path; empty means kubectl's rules
	// ($KUBECONFIG, then ~/.kube/config).
	Kubeconfig string
	// Context is the kubeconfig context; empty means the current one.
	Context string
	// RequestTimeout bounds each request.
	RequestTimeout time.Duration
}

// AddFlags registers --kubeconfig, --context and --request-timeout.
func (f *KubeconfigFlags) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.Kubeconfig, "kubeconfig", f.Kubeconfig, "Path to the kubeconfig file; by default $KUBECONFIG, then ~/.kube/config.")
	fs.StringVar(&f.Context, "context", f.Context, "The kubeconfig context to use; by default the current one.")
	fs.DurationVar(&f.RequestTimeout, "request-timeout", 30*time.Second, "How long to wait for a single request to the API server.")
}

func (f *KubeconfigFlags) loader() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if f.Kubeconfig != "" {
		rules.ExplicitPath = f.Kubeconfig
	}
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: f.Context})
}

// RESTConfig loads the kubeconfig.
func (f *KubeconfigFlags) RESTConfig() (*rest.Config, error) {
	cfg, err := f.loader().ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("failed to load the kubeconfig: %w", err)
	}
	cfg.Timeout = f.RequestTimeout
	return cfg, nil
}

// Namespace returns the kubeconfig context's namespace ("default" if none).
func (f *KubeconfigFlags) Namespace() string {
	ns, _, err := f.loader().Namespace()
	if err != nil || ns == "" {
		return "default"
	}
	return ns
}

// Connect returns a client for the kubeconfig's cluster, and the
// configuration it was made from (its Host is what Explain names). It does
// not contact the cluster.
func (f *KubeconfigFlags) Connect() (client.Client, *rest.Config, error) {
	cfg, err := f.RESTConfig()
	if err != nil {
		return nil, nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, nil, Explain(cfg.Host, err)
	}
	return c, cfg, nil
}

// Explain rewrites a connection failure to the API server at host into a
// sentence a user can act on; other errors pass through.
func Explain(host string, err error) error {
	var netErr net.Error
	var urlErr *url.Error
	if errors.As(err, &urlErr) || errors.As(err, &netErr) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("cannot reach the API server at %s (check --kubeconfig and --context): %w", host, err)
	}
	return err
}

// OneLine folds an error's message onto one line.
func OneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}
