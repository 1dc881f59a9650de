// Package versions provides the CLI's `version` command: the CLI's own
// build and, unless --client, the hypershift-operator's version and image
// and the management cluster's Kubernetes version, so that a skew between
// the CLI and the operator shows.
package versions

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hypershift-le/hypershift/cmd/cli"
	"github.com/hypershift-le/hypershift/cmd/install"
	"github.com/hypershift-le/hypershift/support/version"
)

// operatorName is the hypershift-operator's Deployment.
const operatorName = "hypershift-operator"

type options struct {
	kube                cli.KubeconfigFlags
	clientOnly          bool
	hypershiftNamespace string
}

// NewCommand returns `hypershift version`.
func NewCommand() *cobra.Command {
	o := &options{}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the CLI's version, the hypershift-operator's and the management cluster's",
		Example: `  hypershift version
  hypershift version --client`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fs := cmd.Flags()
	fs.BoolVar(&o.clientOnly, "client", false, "Print the CLI's version only, without contacting the cluster.")
	fs.StringVar(&o.hypershiftNamespace, "hypershift-namespace", "hypershift", "Namespace of the hypershift-operator.")
	o.kube.AddFlags(fs)
	return cmd
}

func (o *options) run(ctx context.Context, out, warn io.Writer) error {
	_, _ = fmt.Fprintf(out, "Client: %s\n", version.String())
	if o.clientOnly {
		return nil
	}
	c, cfg, err := o.kube.Connect()
	if err != nil {
		return err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	server, err := dc.ServerVersion()
	if err != nil {
		return cli.Explain(cfg.Host, fmt.Errorf("failed to read the management cluster's version: %w", err))
	}
	_, _ = fmt.Fprintf(out, "Management cluster: Kubernetes %s\n", server.GitVersion)

	d := &appsv1.Deployment{}
	key := client.ObjectKey{Namespace: o.hypershiftNamespace, Name: operatorName}
	if err := c.Get(ctx, key, d); err != nil {
		if apierrors.IsNotFound(err) {
			_, _ = fmt.Fprintf(out, "hypershift-operator: not installed (no Deployment %s)\n", key)
			return nil
		}
		return cli.Explain(cfg.Host, fmt.Errorf("failed to read the hypershift-operator's Deployment %s: %w", key, err))
	}
	operatorVersion := d.Labels[install.VersionLabel]
	image := ""
	if len(d.Spec.Template.Spec.Containers) > 0 {
		image = d.Spec.Template.Spec.Containers[0].Image
	}
	shown := operatorVersion
	if shown == "" {
		shown = "unknown (installed without the " + install.VersionLabel + " label)"
	}
	_, _ = fmt.Fprintf(out, "hypershift-operator: %s, image %s, %d of %d replicas ready, in namespace %s\n",
		shown, image, d.Status.ReadyReplicas, d.Status.Replicas, o.hypershiftNamespace)
	if operatorVersion != "" && operatorVersion != version.Version {
		_, _ = fmt.Fprintf(warn, "warning: the CLI (%s) and the hypershift-operator (%s) differ: run `hypershift install` with this CLI to upgrade the operator, or use the CLI of the operator's version\n",
			version.Version, operatorVersion)
	}
	return nil
}
