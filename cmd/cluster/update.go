package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/cmd/cli"
	"github.com/hypershift-le/hypershift/support/releaseinfo"
)

// UpdateOptions are the flags of `hypershift update cluster`.
type UpdateOptions struct {
	Name, Namespace              string
	ReleaseImage, PullSecretFile string
	// AcceptReleaseDigest is the digest of the payload a moved release
	// tag names now, to roll out.
	AcceptReleaseDigest string
	Wait                bool
	Timeout             time.Duration
	kube                cli.KubeconfigFlags
}

// NewUpdateCommand returns `hypershift update` with `cluster`.
func NewUpdateCommand() *cobra.Command {
	update := &cobra.Command{Use: "update", Short: "Change hosted clusters", Example: "  hypershift update cluster demo --release-image=quay.io/openshift-release-dev/ocp-release:4.17.1-x86_64 --wait"}
	o := &UpdateOptions{}
	clusterCmd := &cobra.Command{
		Use:   "cluster NAME",
		Short: "Change a HostedCluster's release image or pull secret",
		Long: `Change the release image a HostedCluster runs (an upgrade, or the fix of a
release image that does not exist) and the credentials it pulls with.

--pull-secret replaces the data of the Secret the HostedCluster names when
` + "`hypershift create cluster`" + ` created it (it carries the ` + hyperv1.SafeToDeleteWithClusterLabel + `
label), or creates that Secret when it is missing; a Secret you created
yourself may be shared or managed elsewhere, and is refused: change it where
it is managed. The hypershift-operator copies the new credentials into the
control-plane namespace within seconds.

The hypershift-operator pins the payload a release tag names when it first
reads it, and keeps it when the tag later names another payload: it reports
the move (condition ReleaseImageTagMoved, a Warning event) with the new
payload's digest. --accept-release-digest=<that digest> rolls the new payload
out; a digest the tag does not name is ignored.

Nothing is written unless every change is accepted: the API server judges
the new release image with a server-side dry run first. With --wait, it
waits until the HostedCluster has rolled the release out and is Available,
and ends early with the condition's message when only another change can
help (a release image that does not exist, say).`,
		Example: `  # Fix a release image that does not exist, and wait for the rollout
  hypershift update cluster demo -n clusters --release-image=quay.io/openshift-release-dev/ocp-release:4.17.0-x86_64 --wait

  # Roll out the payload a moved tag names now (the digest its event names)
  hypershift update cluster demo --accept-release-digest=sha256:<digest> --wait

  # Rotate the registry credentials
  hypershift update cluster demo --pull-secret=new-pull-secret.json`,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.Run(cmd.Context(), cmd.OutOrStdout()) },
	}
	cli.NameArg(clusterCmd, &o.Name, "The HostedCluster's name (required).", true)
	fs := clusterCmd.Flags()
	cli.AddNamespaceFlag(fs, &o.Namespace, "The HostedCluster's namespace")
	cli.CompleteNames(clusterCmd, &o.kube, &o.Namespace)
	fs.StringVar(&o.ReleaseImage, "release-image", "", "The release payload pull spec to run.")
	fs.StringVar(&o.PullSecretFile, "pull-secret", "", "A file with the new registry credentials (.dockerconfigjson).")
	fs.StringVar(&o.AcceptReleaseDigest, "accept-release-digest", "", "Roll out the payload the release tag names now, sha256:<digest>, when the tag moved away from the pinned payload (sets the "+hyperv1.AcceptReleaseDigestAnnotation+" annotation).")
	fs.BoolVar(&o.Wait, "wait", false, "Wait until the HostedCluster runs the release and is Available.")
	fs.DurationVar(&o.Timeout, "timeout", 20*time.Minute, "How long --wait waits.")
	o.kube.AddFlags(fs)
	update.AddCommand(clusterCmd)
	return update
}

// validate refuses, before the kubeconfig is read, input that cannot work.
func (o *UpdateOptions) validate() ([]byte, error) {
	if o.ReleaseImage == "" && o.PullSecretFile == "" && o.AcceptReleaseDigest == "" {
		return nil, errors.New("nothing to change: give --release-image, --pull-secret, --accept-release-digest or several")
	}
	if o.AcceptReleaseDigest != "" && !digestPattern.MatchString(o.AcceptReleaseDigest) {
		return nil, fmt.Errorf("invalid --accept-release-digest %q: want sha256: and 64 lowercase hexadecimal digits, as the ReleaseImageTagMoved condition names it", o.AcceptReleaseDigest)
	}
	if strings.TrimSpace(o.ReleaseImage) != o.ReleaseImage {
		return nil, fmt.Errorf("invalid --release-image %q: it has surrounding spaces", o.ReleaseImage)
	}
	if o.PullSecretFile == "" {
		return nil, nil
	}
	pullSecret, err := os.ReadFile(o.PullSecretFile)
	if err != nil {
		return nil, fmt.Errorf("failed to read --pull-secret: %w", err)
	}
	return pullSecret, checkPullSecret(pullSecret)
}

// Run changes the HostedCluster and, with --wait, follows the rollout.
func (o *UpdateOptions) Run(ctx context.Context, out io.Writer) error {
	pullSecret, err := o.validate()
	if err != nil {
		return err
	}
	c, cfg, err := o.kube.Connect()
	if err != nil {
		return err
	}
	err = o.update(ctx, c, pullSecret, out)
	return cli.Explain(cfg.Host, err)
}

// update reads the HostedCluster, judges every change, then writes them:
// the pull secret first, so that the new release is read with the new
// credentials.
func (o *UpdateOptions) update(ctx context.Context, c client.Client, pullSecret []byte, out io.Writer) error {
	k := client.ObjectKey{Namespace: o.Namespace, Name: o.Name}
	hc := &hyperv1.HostedCluster{}
	if err := c.Get(ctx, k, hc); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("HostedCluster %s does not exist: create it with hypershift create cluster none %s -n %s", k, k.Name, k.Namespace)
		}
		return fmt.Errorf("failed to get HostedCluster %s: %w", k, err)
	}
	if !hc.DeletionTimestamp.IsZero() {
		return fmt.Errorf("HostedCluster %s is being deleted: it cannot be changed", k)
	}
	// Judge every change before writing any.
	var secret *pullSecretChange
	if pullSecret != nil {
		var err error
		if secret, err = planPullSecretUpdate(ctx, c, hc, pullSecret); err != nil {
			return err
		}
	}
	patched, release := hc.DeepCopy(), o.ReleaseImage != "" && o.ReleaseImage != hc.Spec.Release.Image
	accept := o.AcceptReleaseDigest != "" && hc.Annotations[hyperv1.AcceptReleaseDigestAnnotation] != o.AcceptReleaseDigest
	if accept {
		metav1.SetMetaDataAnnotation(&patched.ObjectMeta, hyperv1.AcceptReleaseDigestAnnotation, o.AcceptReleaseDigest)
	}
	if release {
		patched.Spec.Release.Image = o.ReleaseImage
	}
	if release || accept {
		// A merge patch of the fields changed: the hypershift-operator's
		// status writes meanwhile do not conflict with it.
		if err := c.Patch(ctx, patched.DeepCopy(), client.MergeFrom(hc), client.DryRunAll); err != nil {
			return fmt.Errorf("the API server refused release image %s for HostedCluster %s: %w", patched.Spec.Release.Image, k, err)
		}
	}

	if secret != nil {
		if err := secret.apply(ctx, c, out); err != nil {
			return err
		}
	}
	if release || accept {
		if err := c.Patch(ctx, patched, client.MergeFrom(hc)); err != nil {
			return fmt.Errorf("failed to set the release image of HostedCluster %s to %s: %w", k, patched.Spec.Release.Image, err)
		}
	}
	switch {
	case release:
		_, _ = fmt.Fprintf(out, "HostedCluster %s: release image %s (was %s)\n", k, o.ReleaseImage, hc.Spec.Release.Image)
	case o.ReleaseImage != "":
		_, _ = fmt.Fprintf(out, "HostedCluster %s already has release image %s\n", k, o.ReleaseImage)
	}
	if o.AcceptReleaseDigest != "" {
		_, _ = fmt.Fprintf(out, "HostedCluster %s: accepts payload %s for release image %s\n", k, o.AcceptReleaseDigest, patched.Spec.Release.Image)
	}
	if !o.Wait {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	return waitRolledOut(ctx, c, k, patched.Generation, o.AcceptReleaseDigest, o.Timeout, out)
}

// digestPattern is what a payload digest looks like.
var digestPattern = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)

// planPullSecretUpdate plans the change of the pull secret hc names, and
// refuses one `create cluster` did not create.
func planPullSecretUpdate(ctx context.Context, c client.Client, hc *hyperv1.HostedCluster, data []byte) (*pullSecretChange, error) {
	change, err := planPullSecret(ctx, c, newPullSecret(hc.Namespace, hc.Spec.PullSecret.Name, data))
	if err != nil || !change.userOwned {
		return change, err
	}
	k := client.ObjectKeyFromObject(change.want)
	return nil, fmt.Errorf("pull secret %s of HostedCluster %s/%s was not created by hypershift create cluster (it has no %s=true label), so it may be shared or managed elsewhere: change it where it is managed, e.g. kubectl create secret generic %s -n %s --type=%s --from-file=%s=FILE --dry-run=client -o yaml | kubectl apply -f -",
		k, hc.Namespace, hc.Name, hyperv1.SafeToDeleteWithClusterLabel, k.Name, k.Namespace, corev1.SecretTypeDockerConfigJson, corev1.DockerConfigJsonKey)
}

// waitRolledOut waits until the hypershift-operator has taken generation
// (or a later one) of the HostedCluster, and the accepted digest when one
// is given, rolled the pinned payload out and finds it Available, printing
// what holds it back; it ends early on a condition only another change can
// clear.
func waitRolledOut(ctx context.Context, c client.Client, k client.ObjectKey, generation int64, accepted string, timeout time.Duration, out io.Writer) error {
	image := ""
	err := waitCluster(ctx, c, k, timeout, out, "HostedCluster %s did not roll its release out", func(_ context.Context, hc *hyperv1.HostedCluster) (string, error) {
		if err := terminal(hc); err != nil {
			return "", err
		}
		if progress := notTrue(hc, true, hyperv1.ValidConfiguration, hyperv1.ValidReleaseImage); progress != "" {
			return progress, nil
		}
		version := hc.Status.Version
		available := meta.FindStatusCondition(hc.Status.Conditions, hyperv1.Available)
		switch {
		case version == nil || version.ObservedGeneration < generation || version.RequestedImage != hc.Spec.Release.Image:
			return "the hypershift-operator has not taken the change yet", nil
		case accepted != "" && releaseinfo.DigestOf(version.Desired.Image) != accepted:
			if moved := meta.FindStatusCondition(hc.Status.Conditions, hyperv1.ReleaseImageTagMoved); moved != nil && moved.Status == metav1.ConditionTrue {
				return fmt.Sprintf("%s=True (%s)", hyperv1.ReleaseImageTagMoved, moved.Message), nil
			}
			return "the hypershift-operator has not pinned " + accepted + " yet", nil
		// The history names the pinned payload, not the tag.
		case len(version.History) == 0 || version.History[0].Image != version.Desired.Image || version.History[0].State != configv1.CompletedUpdate:
			if progressing := meta.FindStatusCondition(hc.Status.Conditions, hyperv1.Progressing); progressing != nil && progressing.Status == metav1.ConditionTrue {
				return fmt.Sprintf("%s=True (%s: %s)", hyperv1.Progressing, progressing.Reason, progressing.Message), nil
			}
			return blocking(hc), nil
		case available == nil || available.Status != metav1.ConditionTrue || available.ObservedGeneration < generation:
			return blocking(hc), nil
		}
		image = hc.Spec.Release.Image
		if pinned := version.History[0].Image; pinned != image {
			image += " (pinned as " + pinned + ")"
		}
		return "", nil
	})
	if err == nil {
		_, _ = fmt.Fprintf(out, "HostedCluster %s runs release image %s and is Available\n", k, image)
	}
	return err
}
