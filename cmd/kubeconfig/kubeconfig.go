// Package kubeconfig implements `hypershift create kubeconfig`: it prints
// the admin kubeconfig of one HostedCluster, or one kubeconfig with a
// context for every HostedCluster that reports one, as HyperShift's does.
package kubeconfig

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/cmd/cli"
)

const description = `Print the admin kubeconfig of hosted clusters.

With --name, it prints the kubeconfig of that HostedCluster: the Secret its
status.kubeconfig names (<name>-admin-kubeconfig, key kubeconfig).

Without --name, it prints one kubeconfig with a context for every
HostedCluster that reports a kubeconfig, in every namespace, named
<namespace>-<name>; the first is the current context. Clusters that report
none yet are left out, and said so on standard error.`

// Options are the flags of `hypershift create kubeconfig`.
type Options struct {
	Name, Namespace string
	kube            cli.KubeconfigFlags
}

// NewCommand returns `kubeconfig`, a subcommand of `hypershift create`.
func NewCommand() *cobra.Command {
	o := &Options{}
	cmd := &cobra.Command{
		Use:   "kubeconfig [NAME]",
		Short: "Print the admin kubeconfig of a hosted cluster, or of all of them",
		Long:  description,
		Example: `  # Use a hosted cluster's API
  hypershift create kubeconfig demo -n clusters > demo.kubeconfig
  kubectl --kubeconfig=demo.kubeconfig get namespaces

  # One kubeconfig with a context per hosted cluster
  hypershift create kubeconfig > hosted.kubeconfig
  kubectl --kubeconfig=hosted.kubeconfig --context=clusters-demo get namespaces`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.Run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cli.NameArg(cmd, &o.Name, "The HostedCluster's name; all HostedClusters when empty.", false)
	fs := cmd.Flags()
	cli.AddNamespaceFlag(fs, &o.Namespace, "The HostedCluster's namespace (with a name)")
	cli.CompleteNames(cmd, &o.kube, &o.Namespace)
	o.kube.AddFlags(fs)
	return cmd
}

// Run prints the kubeconfig to out, and what it leaves out to log.
func (o *Options) Run(ctx context.Context, out, log io.Writer) error {
	c, cfg, err := o.kube.Connect()
	if err != nil {
		return err
	}
	if o.Name != "" {
		hc := &hyperv1.HostedCluster{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Name}, hc); err != nil {
			return cli.Explain(cfg.Host, fmt.Errorf("failed to get HostedCluster %s/%s: %w", o.Namespace, o.Name, err))
		}
		data, err := Get(ctx, c, hc)
		if err != nil {
			return cli.Explain(cfg.Host, err)
		}
		_, err = out.Write(data)
		return err
	}
	list := &hyperv1.HostedClusterList{}
	if err := c.List(ctx, list); err != nil {
		return cli.Explain(cfg.Host, fmt.Errorf("failed to list HostedClusters: %w", err))
	}
	merged, err := Merge(ctx, c, list.Items, log)
	if err != nil {
		return err
	}
	data, err := clientcmd.Write(*merged)
	if err != nil {
		return fmt.Errorf("failed to write the kubeconfig: %w", err)
	}
	_, err = out.Write(data)
	return err
}

// ErrNoKubeconfig says a HostedCluster reports no kubeconfig yet.
var ErrNoKubeconfig = errors.New("reports no kubeconfig yet: its control plane is not up")

// Get returns the admin kubeconfig hc's status.kubeconfig names.
func Get(ctx context.Context, c client.Reader, hc *hyperv1.HostedCluster) ([]byte, error) {
	if hc.Status.KubeConfig == nil {
		return nil, fmt.Errorf("HostedCluster %s/%s %w", hc.Namespace, hc.Name, ErrNoKubeconfig)
	}
	secret := &corev1.Secret{}
	key := client.ObjectKey{Namespace: hc.Namespace, Name: hc.Status.KubeConfig.Name}
	if err := c.Get(ctx, key, secret); err != nil {
		return nil, fmt.Errorf("failed to get the kubeconfig Secret %s of HostedCluster %s/%s: %w", key, hc.Namespace, hc.Name, err)
	}
	data := secret.Data[hyperv1.KubeconfigKey]
	if len(data) == 0 {
		return nil, fmt.Errorf("the kubeconfig Secret %s has no %q key", key, hyperv1.KubeconfigKey)
	}
	return data, nil
}

// Merge returns one kubeconfig with a context named <namespace>-<name>
// for each of clusters that reports a kubeconfig (its cluster and user are
// named the same, the user with an -admin suffix), sorted by name; the
// first is the current context. Clusters it cannot include are reported
// to log and left out.
func Merge(ctx context.Context, c client.Reader, clusters []hyperv1.HostedCluster, log io.Writer) (*clientcmdapi.Config, error) {
	sort.Slice(clusters, func(i, j int) bool {
		return clusters[i].Namespace+"/"+clusters[i].Name < clusters[j].Namespace+"/"+clusters[j].Name
	})
	merged := clientcmdapi.NewConfig()
	for i := range clusters {
		hc := &clusters[i]
		data, err := Get(ctx, c, hc)
		if err != nil {
			_, _ = fmt.Fprintf(log, "Skipping %s/%s: %v\n", hc.Namespace, hc.Name, errorText(err))
			continue
		}
		one, err := clientcmd.Load(data)
		if err != nil {
			_, _ = fmt.Fprintf(log, "Skipping %s/%s: its kubeconfig does not load: %v\n", hc.Namespace, hc.Name, err)
			continue
		}
		current, ok := one.Contexts[one.CurrentContext]
		if !ok || one.Clusters[current.Cluster] == nil || one.AuthInfos[current.AuthInfo] == nil {
			_, _ = fmt.Fprintf(log, "Skipping %s/%s: its kubeconfig has no usable current context\n", hc.Namespace, hc.Name)
			continue
		}
		name := hc.Namespace + "-" + hc.Name
		merged.Clusters[name] = one.Clusters[current.Cluster]
		merged.AuthInfos[name+"-admin"] = one.AuthInfos[current.AuthInfo]
		merged.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name + "-admin", Namespace: "default"}
		if merged.CurrentContext == "" {
			merged.CurrentContext = name
		}
	}
	if len(merged.Contexts) == 0 && len(clusters) > 0 {
		return nil, errors.New("no HostedCluster reports a usable kubeconfig yet")
	}
	return merged, nil
}

func errorText(err error) string {
	if errors.Is(err, ErrNoKubeconfig) {
		return ErrNoKubeconfig.Error()
	}
	return err.Error()
}
