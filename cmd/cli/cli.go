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

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/scheme"
)

// FieldOwner is the server-side apply field manager of the CLI.
const FieldOwner = "hypershift-cli"

// KubeconfigFlags are the connection flags every command that talks to a
// cluster takes: kubectl's own (genericclioptions.ConfigFlags: --kubeconfig,
// --context, --cluster, --user, --as, --as-group, --as-uid, --token,
// --server, --certificate-authority, --request-timeout and the rest),
// except --namespace, which each command defines with the one default rule
// (DefaultNamespace).
type KubeconfigFlags struct {
	flags *genericclioptions.ConfigFlags
}

// DefaultNamespace is where every command looks for HostedClusters unless
// -n/--namespace says otherwise, as HyperShift's CLI does: not the
// kubeconfig context's namespace.
const DefaultNamespace = "clusters"

// defaultRequestTimeout bounds each request unless --request-timeout says
// otherwise (kubectl's default, 0, waits forever).
const defaultRequestTimeout = "30s"

func (f *KubeconfigFlags) config() *genericclioptions.ConfigFlags {
	if f.flags == nil {
		f.flags = genericclioptions.NewConfigFlags(false)
		f.flags.Namespace = nil // each command's own -n
		f.flags.CacheDir = nil  // no discovery cache to keep
		*f.flags.Timeout = defaultRequestTimeout
	}
	return f.flags
}

// AddFlags registers kubectl's connection flags on fs.
func (f *KubeconfigFlags) AddFlags(fs *pflag.FlagSet) {
	f.config().AddFlags(fs)
}

// RESTConfig loads the kubeconfig with the flags' overrides.
func (f *KubeconfigFlags) RESTConfig() (*rest.Config, error) {
	cfg, err := f.config().ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("failed to load the kubeconfig: %w", err)
	}
	return cfg, nil
}

// AddNamespaceFlag registers -n/--namespace on fs, defaulting to
// DefaultNamespace, for the HostedClusters a command works on; usage is
// completed with the default.
func AddNamespaceFlag(fs *pflag.FlagSet, namespace *string, usage string) {
	fs.StringVarP(namespace, "namespace", "n", DefaultNamespace, usage+" (not the kubeconfig context's: the same default for every command).")
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

// NameArg completes a command that takes a HostedCluster's name as kubectl
// takes an object's: as its one argument, or, as HyperShift's CLI does, as
// --name (into name); both may be given only if they agree. With required,
// a name must be given one way or the other.
func NameArg(cmd *cobra.Command, name *string, usage string, required bool) {
	KindNameArg(cmd, "HostedCluster", name, usage, required)
}

// KindNameArg is NameArg for an object of another kind, which the error of
// a missing name names.
func KindNameArg(cmd *cobra.Command, kind string, name *string, usage string, required bool) {
	cmd.Flags().StringVar(name, "name", "", usage+" Also the command's argument.")
	cmd.Args = func(cmd *cobra.Command, args []string) error {
		if err := cobra.MaximumNArgs(1)(cmd, args); err != nil {
			return err
		}
		if len(args) == 1 {
			if cmd.Flags().Changed("name") && *name != args[0] {
				return fmt.Errorf("the name is given twice, as %q and as --name=%q: give one", args[0], *name)
			}
			*name = args[0]
		}
		if required && *name == "" {
			return fmt.Errorf("a %s name is required: %s NAME (or --name=NAME)", kind, cmd.CommandPath())
		}
		return nil
	}
}

// CompleteNames completes, for shell completion, cmd's argument and --name
// with the HostedClusters in the namespace -n gives, and -n with the
// namespaces, as the kubeconfig lets the user list them. Completion never
// fails loudly: a cluster that cannot be reached completes nothing.
func CompleteNames(cmd *cobra.Command, kube *KubeconfigFlags, namespace *string) {
	names := completeFrom(kube, func(ctx context.Context, c client.Client) ([]string, error) {
		list := &hyperv1.HostedClusterList{}
		if err := c.List(ctx, list, client.InNamespace(*namespace)); err != nil {
			return nil, err
		}
		out := make([]string, 0, len(list.Items))
		for _, hc := range list.Items {
			out = append(out, hc.Name)
		}
		return out, nil
	})
	namespaces := completeFrom(kube, func(ctx context.Context, c client.Client) ([]string, error) {
		list := &corev1.NamespaceList{}
		if err := c.List(ctx, list); err != nil {
			return nil, err
		}
		out := make([]string, 0, len(list.Items))
		for _, ns := range list.Items {
			out = append(out, ns.Name)
		}
		return out, nil
	})
	cmd.ValidArgsFunction = func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return names(cmd, args, toComplete)
	}
	_ = cmd.RegisterFlagCompletionFunc("name", names)
	_ = cmd.RegisterFlagCompletionFunc("namespace", namespaces)
}

// completeFrom is a completion that lists with list through the
// kubeconfig's cluster; any failure completes nothing.
func completeFrom(kube *KubeconfigFlags, list func(context.Context, client.Client) ([]string, error)) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
		c, _, err := kube.Connect()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		out, err := list(cmd.Context(), c)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
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
