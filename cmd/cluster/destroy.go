package cluster

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/cmd/cli"
)

// DestroyOptions are the flags of `hypershift destroy cluster`.
type DestroyOptions struct {
	Name, Namespace string
	Wait            bool
	Timeout         time.Duration
	kube            cli.KubeconfigFlags
}

// NewDestroyCommand returns `hypershift destroy` with `cluster`.
func NewDestroyCommand() *cobra.Command {
	destroy := &cobra.Command{Use: "destroy", Short: "Destroy hosted clusters", Example: "  hypershift destroy cluster demo -n clusters --wait"}
	o := &DestroyOptions{}
	clusterCmd := &cobra.Command{
		Use:   "cluster NAME",
		Short: "Delete a HostedCluster and, with --wait, wait until its control plane is gone",
		Long: `Delete a HostedCluster. The hypershift-operator tears its control plane down:
the control-plane-operator removes the components, then the control-plane
namespace is deleted with everything in it, etcd's persistent volume claims
among them: the hosted cluster's data goes with the namespace and cannot be
recovered. The copy of the admin kubeconfig (<name>-admin-kubeconfig) goes
too, and so does the pull secret when ` + "`hypershift create cluster`" + ` created it
(it carries the ` + hyperv1.SafeToDeleteWithClusterLabel + ` label); a pull secret you
created yourself is left alone. With --wait, it reports each step until the
HostedCluster is gone.`,
		Example: `  # Delete and wait for the teardown, reporting each step
  hypershift destroy cluster demo -n clusters --wait --timeout=10m`,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.Run(cmd.Context(), cmd.OutOrStdout()) },
	}
	cli.NameArg(clusterCmd, &o.Name, "The HostedCluster's name (required).", true)
	fs := clusterCmd.Flags()
	cli.AddNamespaceFlag(fs, &o.Namespace, "The HostedCluster's namespace")
	cli.CompleteNames(clusterCmd, &o.kube, &o.Namespace)
	fs.BoolVar(&o.Wait, "wait", false, "Wait until the HostedCluster is gone.")
	fs.DurationVar(&o.Timeout, "timeout", 10*time.Minute, "How long --wait waits.")
	o.kube.AddFlags(fs)
	destroy.AddCommand(clusterCmd)
	return destroy
}

// Run deletes the HostedCluster and, with --wait, follows the teardown.
func (o *DestroyOptions) Run(ctx context.Context, out io.Writer) error {
	c, cfg, err := o.kube.Connect()
	if err != nil {
		return err
	}
	k := client.ObjectKey{Namespace: o.Namespace, Name: o.Name}
	hc := &hyperv1.HostedCluster{}
	if err := c.Get(ctx, k, hc); err != nil {
		if apierrors.IsNotFound(err) {
			_, _ = fmt.Fprintf(out, "HostedCluster %s does not exist\n", k)
			return nil
		}
		return cli.Explain(cfg.Host, fmt.Errorf("failed to get HostedCluster %s: %w", k, err))
	}
	if err := c.Delete(ctx, hc); err != nil && !apierrors.IsNotFound(err) {
		return cli.Explain(cfg.Host, fmt.Errorf("failed to delete HostedCluster %s: %w", k, err))
	}
	_, _ = fmt.Fprintf(out, "HostedCluster %s deleted\n", k)
	// The teardown does not read the pull secret: the one create cluster
	// made for this cluster can go now.
	if err := deletePullSecret(ctx, c, hc, out); err != nil {
		return cli.Explain(cfg.Host, err)
	}
	if !o.Wait {
		return nil
	}
	last := ""
	err = wait.PollUntilContextTimeout(ctx, time.Second, o.Timeout, true, func(ctx context.Context) (bool, error) {
		step, gone, err := teardownStep(ctx, c, k)
		if err != nil || gone {
			return gone, err
		}
		if step != last {
			_, _ = fmt.Fprintln(out, step)
			last = step
		}
		return false, nil
	})
	if wait.Interrupted(err) {
		return fmt.Errorf("HostedCluster %s was not gone within %s (%s)", k, o.Timeout, last)
	}
	if err != nil {
		return cli.Explain(cfg.Host, fmt.Errorf("failed to wait for HostedCluster %s to go: %w", k, err))
	}
	_, _ = fmt.Fprintf(out, "HostedCluster %s is gone\n", k)
	return nil
}

// teardownStep says what the teardown of k waits for.
func teardownStep(ctx context.Context, c client.Client, k client.ObjectKey) (string, bool, error) {
	hc := &hyperv1.HostedCluster{}
	if err := c.Get(ctx, k, hc); err != nil {
		if apierrors.IsNotFound(err) {
			return "", true, nil
		}
		return "", false, err
	}
	if !slices.Contains(hc.Finalizers, hyperv1.Finalizer) {
		return fmt.Sprintf("Waiting for HostedCluster %s: finalizers %v", k, hc.Finalizers), false, nil
	}
	ns := hyperv1.ControlPlaneNamespace(k.Namespace, k.Name)
	hcp := &hyperv1.HostedControlPlane{}
	switch err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: k.Name}, hcp); {
	case err == nil:
		return fmt.Sprintf("Waiting for the control-plane-operator to finalize HostedControlPlane %s/%s", ns, k.Name), false, nil
	case !apierrors.IsNotFound(err):
		return "", false, err
	}
	switch err := c.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}); {
	case err == nil:
		return "Waiting for namespace " + ns + " to be deleted", false, nil
	case !apierrors.IsNotFound(err):
		return "", false, err
	}
	return "Waiting for the hypershift-operator to remove finalizer " + hyperv1.Finalizer, false, nil
}
