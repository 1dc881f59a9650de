// Package nodepool implements `hypershift create nodepool`: a NodePool of
// a HostedCluster, and for platform None, where the user brings the
// machines, what a machine needs to join (the pool's bootstrap kubeconfig,
// the hosted cluster's CA and the kubelet's configuration) written where
// the user asks, and nothing that grants more.
package nodepool

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/cmd/cli"
	"github.com/hypershift-le/hypershift/cmd/install"
)

// CreateOptions are the flags of `hypershift create nodepool none|pod`.
type CreateOptions struct {
	Name, Namespace, ClusterName, ReleaseImage string
	// Platform is the pool's platform: None (you bring the machines) or
	// Pod (the management cluster runs them).
	Platform   hyperv1.PlatformType
	Replicas   int32
	NodeLabels map[string]string
	// AutoRepair and NodeDrainTimeout are the pool's management (Pod).
	AutoRepair       bool
	NodeDrainTimeout time.Duration
	Render           bool
	// OutputDir receives the join material once the operator has
	// published it (None); nothing is written when empty.
	OutputDir string
	// Wait waits until the pool's nodes are all Ready (Pod).
	Wait    bool
	Timeout time.Duration
	kube    cli.KubeconfigFlags
}

// NewCreateCommand returns `hypershift create nodepool` with `none` and
// `pod`.
func NewCreateCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "nodepool",
		Short:   "Create a NodePool: worker machines that join a HostedCluster",
		Example: "  hypershift create nodepool none workers --cluster-name=demo --replicas=2 --output-dir=./join\n  hypershift create nodepool pod workers --cluster-name=demo --replicas=3 --wait",
	}
	cmd.AddCommand(noneCommand(), podCommand())
	return cmd
}

func noneCommand() *cobra.Command {
	o := &CreateOptions{Platform: hyperv1.NonePlatform}
	none := &cobra.Command{
		Use:   "none NAME",
		Short: "Create a NodePool of platform None: you bring the machines, the operator publishes how they join",
		Example: `  # A pool of two machines for cluster demo; write what each machine needs to join
  hypershift create nodepool none workers --cluster-name=demo -n clusters --replicas=2 --output-dir=./join
  # then, on each machine (the kubelet asks for its certificates; the control plane approves them):
  kubelet --bootstrap-kubeconfig=./join/bootstrap.kubeconfig --kubeconfig=/var/lib/kubelet/kubeconfig \
    --config=<your kubelet config> --config-dir=./join/kubelet.conf.d

  # Print the NodePool instead of creating it
  hypershift create nodepool none workers --cluster-name=demo --release-image=... --render`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.Run(cmd.Context(), cmd.OutOrStdout())
		},
	}
	fs := o.commonFlags(none)
	fs.StringVar(&o.OutputDir, "output-dir", "", "Wait for the pool's join material and write it into this directory: bootstrap.kubeconfig, ca.crt and kubelet.conf.d/.")
	fs.DurationVar(&o.Timeout, "timeout", 5*time.Minute, "How long --output-dir waits for the join material.")
	return none
}

func podCommand() *cobra.Command {
	o := &CreateOptions{Platform: hyperv1.PodPlatform}
	pod := &cobra.Command{
		Use:   "pod NAME",
		Short: "Create a NodePool of platform Pod: the management cluster runs its machines, scales, replaces and repairs them",
		Example: `  # Three machines for cluster demo (of platform Pod), replaced when their node stays unhealthy
  hypershift create nodepool pod workers --cluster-name=demo -n clusters --replicas=3 --auto-repair --wait
  kubectl scale np workers -n clusters --replicas=5

  # Print the NodePool instead of creating it
  hypershift create nodepool pod workers --cluster-name=demo --release-image=... --render`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.Run(cmd.Context(), cmd.OutOrStdout())
		},
	}
	fs := o.commonFlags(pod)
	fs.BoolVar(&o.AutoRepair, "auto-repair", false, "Replace a machine whose node stays not Ready (8 minutes) or does not join (20 minutes).")
	fs.DurationVar(&o.NodeDrainTimeout, "node-drain-timeout", 0, "How long removing a machine waits for its node to drain (PodDisruptionBudgets respected) before it goes on regardless; 0 waits as long as draining takes.")
	fs.BoolVar(&o.Wait, "wait", false, "Wait until every node the pool asks for has joined and is Ready.")
	fs.DurationVar(&o.Timeout, "timeout", 10*time.Minute, "How long --wait waits.")
	return pod
}

// commonFlags registers the name argument and the flags of every platform.
func (o *CreateOptions) commonFlags(cmd *cobra.Command) *pflag.FlagSet {
	cli.KindNameArg(cmd, "NodePool", &o.Name, "The NodePool's name (required).", true)
	fs := cmd.Flags()
	cli.AddNamespaceFlag(fs, &o.Namespace, "The namespace of the NodePool and of its HostedCluster")
	fs.StringVar(&o.ClusterName, "cluster-name", "", "The HostedCluster the machines join (required).")
	fs.Int32Var(&o.Replicas, "replicas", 2, "How many machines the pool has.")
	fs.StringVar(&o.ReleaseImage, "release-image", "", "The release payload the machines run; by default the HostedCluster's.")
	fs.StringToStringVar(&o.NodeLabels, "node-labels", nil, "Labels of the pool's nodes, as key=value pairs.")
	fs.BoolVar(&o.Render, "render", false, "Print the NodePool as YAML instead of creating it (needs --release-image: it reads no cluster).")
	o.kube.AddFlags(fs)
	_ = cmd.MarkFlagRequired("cluster-name")
	return fs
}

func (o *CreateOptions) validate() error {
	if errs := validation.IsDNS1123Label(o.Namespace); len(errs) > 0 {
		return fmt.Errorf("invalid --namespace %q: %s", o.Namespace, strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1123Subdomain(o.Name); len(errs) > 0 {
		return fmt.Errorf("invalid NodePool name %q: %s", o.Name, strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1123Subdomain(o.ClusterName); len(errs) > 0 {
		return fmt.Errorf("invalid --cluster-name %q: %s", o.ClusterName, strings.Join(errs, "; "))
	}
	if o.Replicas < 0 {
		return fmt.Errorf("invalid --replicas %d: a pool has 0 machines or more", o.Replicas)
	}
	if o.Render && o.ReleaseImage == "" {
		return errors.New("--render needs --release-image: it reads no HostedCluster to take the release from")
	}
	if o.Render && o.OutputDir != "" {
		return errors.New("--render prints the NodePool and creates nothing: there is no join material to write to --output-dir")
	}
	if o.Render && o.Wait {
		return errors.New("--render prints the NodePool and creates nothing: it cannot --wait")
	}
	if o.NodeDrainTimeout < 0 {
		return fmt.Errorf("invalid --node-drain-timeout %s: want 0 (wait as long as draining takes) or more", o.NodeDrainTimeout)
	}
	return nil
}

// NodePool is the NodePool the options describe.
func (o *CreateOptions) NodePool() *hyperv1.NodePool {
	np := &hyperv1.NodePool{
		TypeMeta:   metav1.TypeMeta{APIVersion: hyperv1.GroupVersion.String(), Kind: "NodePool"},
		ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: o.Name},
		Spec: hyperv1.NodePoolSpec{
			ClusterName: o.ClusterName,
			Release:     hyperv1.Release{Image: o.ReleaseImage},
			Replicas:    ptr.To(o.Replicas),
			Platform:    hyperv1.NodePoolPlatform{Type: cmp.Or(o.Platform, hyperv1.NonePlatform)},
			Management:  hyperv1.NodePoolManagement{UpgradeType: hyperv1.UpgradeTypeReplace, AutoRepair: o.AutoRepair},
			NodeLabels:  o.NodeLabels,
		},
	}
	if o.NodeDrainTimeout > 0 {
		np.Spec.NodeDrainTimeout = &metav1.Duration{Duration: o.NodeDrainTimeout}
	}
	return np
}

// Run creates (or with --render prints) the NodePool, and with
// --output-dir writes its join material.
func (o *CreateOptions) Run(ctx context.Context, out io.Writer) error {
	if err := o.validate(); err != nil {
		return err
	}
	if o.Render {
		return install.Render(out, "yaml", []client.Object{o.NodePool()})
	}
	c, cfg, err := o.kube.Connect()
	if err != nil {
		return err
	}
	hc := &hyperv1.HostedCluster{}
	switch err := c.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.ClusterName}, hc); {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("HostedCluster %s/%s does not exist: create it first (hypershift create cluster none %s -n %s), or name an existing one with --cluster-name",
			o.Namespace, o.ClusterName, o.ClusterName, o.Namespace)
	case err != nil:
		return cli.Explain(cfg.Host, fmt.Errorf("failed to get HostedCluster %s/%s: %w", o.Namespace, o.ClusterName, err))
	}
	if !hc.DeletionTimestamp.IsZero() {
		return fmt.Errorf("HostedCluster %s/%s is being deleted: its machines would join nothing", o.Namespace, o.ClusterName)
	}
	if o.Platform == hyperv1.PodPlatform && hc.Spec.Platform.Type != hyperv1.PodPlatform {
		return fmt.Errorf("HostedCluster %s/%s is of platform %s, which runs no machines: create a pool of platform None (hypershift create nodepool none), or a HostedCluster of platform Pod (hypershift create cluster pod)",
			o.Namespace, o.ClusterName, hc.Spec.Platform.Type)
	}
	if o.ReleaseImage == "" {
		o.ReleaseImage = hc.Spec.Release.Image
	}
	np := o.NodePool()
	if err := c.Create(ctx, np); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("NodePool %s/%s already exists: scale it with kubectl scale np %s -n %s --replicas=N, or choose another name", o.Namespace, o.Name, o.Name, o.Namespace)
		}
		return cli.Explain(cfg.Host, fmt.Errorf("the API server refused NodePool %s/%s: %w", o.Namespace, o.Name, err))
	}
	_, _ = fmt.Fprintf(out, "NodePool %s/%s created for HostedCluster %s (%d machines, release %s)\n", o.Namespace, o.Name, o.ClusterName, o.Replicas, o.ReleaseImage)
	if o.ReleaseImage != hc.Spec.Release.Image {
		if err := o.awaitRelease(ctx, c, np, out); err != nil {
			return cli.Explain(cfg.Host, err)
		}
	}
	if o.Platform == hyperv1.PodPlatform {
		_, _ = fmt.Fprintf(out, "The management cluster runs its machines (MachineDeployment %s/%s); follow them with kubectl get np %s -n %s\n",
			hyperv1.ControlPlaneNamespace(o.Namespace, o.ClusterName), o.Name, o.Name, o.Namespace)
		if !o.Wait {
			return nil
		}
		return cli.Explain(cfg.Host, o.awaitReady(ctx, c, out))
	}
	secretName := hyperv1.NodePoolJoinSecretName(o.Name)
	if o.OutputDir == "" {
		_, _ = fmt.Fprintf(out, "Machines join with what Secret %s/%s holds once the operator publishes it (or run again with --output-dir on a new pool)\n", o.Namespace, secretName)
		return nil
	}
	secret, err := o.awaitJoin(ctx, c, out)
	if err != nil {
		return cli.Explain(cfg.Host, err)
	}
	return o.write(secret, out)
}

// releaseVerdictTimeout bounds how long a pool of another release than its
// cluster's waits for the operator to judge that release.
const releaseVerdictTimeout = time.Minute

// awaitRelease waits for the hypershift-operator's verdict on a release
// other than the cluster's (it reads the payload with the cluster's pull
// secret): a release it cannot read, or one the cluster does not support
// (newer than the cluster's, or more than three minors older), is refused,
// and the pool just created deleted again. Without a verdict in time the
// pool stays, and the command says so.
func (o *CreateOptions) awaitRelease(ctx context.Context, c client.Client, np *hyperv1.NodePool, out io.Writer) error {
	var refusal error
	err := wait.PollUntilContextTimeout(ctx, time.Second, min(o.Timeout, releaseVerdictTimeout), true, func(ctx context.Context) (bool, error) {
		live := &hyperv1.NodePool{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(np), live); err != nil {
			return false, nil
		}
		judged := 0
		for _, t := range []string{hyperv1.ValidReleaseImage, hyperv1.SupportedVersionSkew} {
			cond := meta.FindStatusCondition(live.Status.Conditions, t)
			if cond == nil || cond.ObservedGeneration < live.Generation {
				continue
			}
			if cond.Status == metav1.ConditionFalse {
				refusal = fmt.Errorf("the release of NodePool %s/%s is refused (%s=False, %s): %s", np.Namespace, np.Name, t, cond.Reason, cond.Message)
				return true, nil
			}
			judged++
		}
		return judged == 2, nil
	})
	switch {
	case refusal != nil:
		uid := np.UID
		if delErr := c.Delete(ctx, np, client.Preconditions{UID: &uid}); delErr != nil && !apierrors.IsNotFound(delErr) {
			return errors.Join(refusal, fmt.Errorf("failed to delete NodePool %s/%s again: %w", np.Namespace, np.Name, delErr))
		}
		return fmt.Errorf("%w; the NodePool was deleted again", refusal)
	case ctx.Err() != nil:
		return ctx.Err()
	case err != nil:
		_, _ = fmt.Fprintf(out, "Warning: the hypershift-operator has not judged release %s within %s; the NodePool stays (its ValidReleaseImage and SupportedVersionSkew conditions will say)\n",
			o.ReleaseImage, min(o.Timeout, releaseVerdictTimeout))
	}
	return nil
}

// awaitReady waits, bounded by --timeout, until the pool is Ready (every
// node it asks for joined and Ready), printing its Ready message as it
// changes.
func (o *CreateOptions) awaitReady(ctx context.Context, c client.Client, out io.Writer) error {
	key := client.ObjectKey{Namespace: o.Namespace, Name: o.Name}
	last := ""
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, o.Timeout, true, func(ctx context.Context) (bool, error) {
		np := &hyperv1.NodePool{}
		if err := c.Get(ctx, key, np); err != nil {
			return false, nil
		}
		ready := meta.FindStatusCondition(np.Status.Conditions, hyperv1.Ready)
		if ready == nil || ready.ObservedGeneration < np.Generation {
			return false, nil
		}
		if ready.Message != last {
			last = ready.Message
			_, _ = fmt.Fprintf(out, "NodePool %s: Ready=%s (%s)\n", key, ready.Status, ready.Message)
		}
		return ready.Status == metav1.ConditionTrue, nil
	})
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("NodePool %s is not Ready after %s: %s; it stays (kubectl get np %s -n %s)", key, o.Timeout, last, o.Name, o.Namespace)
	}
	return err
}

// awaitJoin waits, bounded by --timeout, for the pool's join Secret, and
// says what the pool waits for when it does not come.
func (o *CreateOptions) awaitJoin(ctx context.Context, c client.Client, out io.Writer) (*corev1.Secret, error) {
	_, _ = fmt.Fprintf(out, "Waiting up to %s for the join material of NodePool %s/%s...\n", o.Timeout, o.Namespace, o.Name)
	key := client.ObjectKey{Namespace: o.Namespace, Name: hyperv1.NodePoolJoinSecretName(o.Name)}
	secret := &corev1.Secret{}
	var last error
	err := wait.PollUntilContextTimeout(ctx, time.Second, o.Timeout, true, func(ctx context.Context) (bool, error) {
		switch last = c.Get(ctx, key, secret); {
		case last == nil:
			return len(secret.Data[hyperv1.BootstrapKubeconfigKey]) > 0, nil
		case apierrors.IsNotFound(last):
			return false, nil
		}
		return false, nil // a passing error is retried; the last one is told
	})
	if err == nil {
		return secret, nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	why := "the hypershift-operator has not published it"
	np := &hyperv1.NodePool{}
	if getErr := c.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Name}, np); getErr == nil {
		for _, cond := range np.Status.Conditions {
			if cond.Type == hyperv1.Ready && cond.Status != metav1.ConditionTrue {
				why = fmt.Sprintf("the NodePool is not Ready (%s: %s)", cond.Reason, cond.Message)
			}
		}
	}
	if last != nil && !apierrors.IsNotFound(last) && !errors.Is(last, context.DeadlineExceeded) {
		why += fmt.Sprintf("; the last read failed: %v", last)
	}
	return nil, fmt.Errorf("no join material in Secret %s/%s after %s: %s; the NodePool stays, and the Secret appears when the pool is Ready (kubectl get np %s -n %s)",
		key.Namespace, key.Name, o.Timeout, why, o.Name, o.Namespace)
}

// JoinFiles are the files the join material is written as, relative to
// --output-dir, with their modes: the bootstrap kubeconfig holds a
// credential and is the user's alone.
var JoinFiles = []struct {
	Path, Key string
	Mode      os.FileMode
}{
	{"bootstrap.kubeconfig", hyperv1.BootstrapKubeconfigKey, 0o600},
	{"ca.crt", hyperv1.CACertKey, 0o644},
	{filepath.Join("kubelet.conf.d", "50-"+hyperv1.KubeletConfigKey), hyperv1.KubeletConfigKey, 0o644},
}

// write writes the join Secret's files into --output-dir.
func (o *CreateOptions) write(secret *corev1.Secret, out io.Writer) error {
	for _, f := range JoinFiles {
		data, ok := secret.Data[f.Key]
		if !ok {
			continue
		}
		path := filepath.Join(o.OutputDir, f.Path)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("failed to create %s: %w", filepath.Dir(path), err)
		}
		if err := os.WriteFile(path, data, f.Mode); err != nil {
			return fmt.Errorf("failed to write %s: %w", path, err)
		}
		// WriteFile keeps the mode of a file that was there.
		if err := os.Chmod(path, f.Mode); err != nil {
			return fmt.Errorf("failed to set the mode of %s: %w", path, err)
		}
		_, _ = fmt.Fprintf(out, "Wrote %s\n", path)
	}
	_, _ = fmt.Fprintf(out, "A machine joins with: kubelet --bootstrap-kubeconfig=%s --kubeconfig=/var/lib/kubelet/kubeconfig --config-dir=%s (the token in the bootstrap kubeconfig can only join; it expires within a day, the Secret holds the current one)\n",
		filepath.Join(o.OutputDir, "bootstrap.kubeconfig"), filepath.Join(o.OutputDir, "kubelet.conf.d"))
	return nil
}
