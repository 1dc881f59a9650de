// Package etcdbackup implements `hypershift create etcd-backup`: an
// EtcdBackup, one snapshot of a HostedCluster's etcd written to a
// PersistentVolumeClaim beside it, and with --wait the snapshot's
// revision, size and SHA-256 once it is written.
package etcdbackup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/cmd/cli"
	"github.com/hypershift-le/hypershift/cmd/install"
)

// CreateOptions are the flags of `hypershift create etcd-backup`.
type CreateOptions struct {
	Name, Namespace, ClusterName, ClaimName string
	Render                                  bool
	Wait                                    bool
	Timeout                                 time.Duration
	kube                                    cli.KubeconfigFlags
}

// NewCreateCommand returns `hypershift create etcd-backup`.
func NewCreateCommand() *cobra.Command {
	o := &CreateOptions{}
	cmd := &cobra.Command{
		Use:   "etcd-backup NAME",
		Short: "Take a snapshot of a HostedCluster's etcd and write it to a PersistentVolumeClaim",
		Long: `Create an EtcdBackup: the hypershift-operator takes one snapshot of the
HostedCluster's etcd (as etcdctl snapshot save does, from one member) and
writes it as NAME.db at the root of the PersistentVolumeClaim --claim-name,
in the HostedCluster's namespace. The EtcdBackup's status then holds the
snapshot's etcd revision, size and SHA-256. The file stays on the claim when
the EtcdBackup is deleted; an existing file of that name is never
overwritten. A failed backup stays failed: create another.`,
		Example: `  kubectl create -n clusters -f backups-claim.yaml   # a PersistentVolumeClaim named backups
  hypershift create etcd-backup demo-nightly --cluster-name=demo --claim-name=backups --wait
  kubectl get etcdbackup demo-nightly -n clusters -o wide`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.Run(cmd.Context(), cmd.OutOrStdout())
		},
	}
	cli.KindNameArg(cmd, "EtcdBackup", &o.Name, "The EtcdBackup's name, which also names the snapshot's file (required).", true)
	fs := cmd.Flags()
	cli.AddNamespaceFlag(fs, &o.Namespace, "The namespace of the EtcdBackup, its HostedCluster and its claim")
	fs.StringVar(&o.ClusterName, "cluster-name", "", "The HostedCluster whose etcd is backed up (required).")
	fs.StringVar(&o.ClaimName, "claim-name", "", "The PersistentVolumeClaim the snapshot is written to (required).")
	fs.BoolVar(&o.Render, "render", false, "Print the EtcdBackup as YAML instead of creating it.")
	fs.BoolVar(&o.Wait, "wait", false, "Wait until the snapshot is written, and print its revision, size and SHA-256.")
	fs.DurationVar(&o.Timeout, "timeout", 20*time.Minute, "How long --wait waits.")
	o.kube.AddFlags(fs)
	_ = cmd.MarkFlagRequired("cluster-name")
	_ = cmd.MarkFlagRequired("claim-name")
	return cmd
}

func (o *CreateOptions) validate() error {
	if errs := validation.IsDNS1123Label(o.Namespace); len(errs) > 0 {
		return fmt.Errorf("invalid --namespace %q: %s", o.Namespace, strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1123Label(o.Name); len(errs) > 0 || len(o.Name) > 50 {
		return fmt.Errorf("invalid EtcdBackup name %q: it must be a lowercase RFC 1123 label of at most 50 characters (it names the snapshot's file and the backup's Jobs)", o.Name)
	}
	if errs := validation.IsDNS1123Subdomain(o.ClusterName); len(errs) > 0 {
		return fmt.Errorf("invalid --cluster-name %q: %s", o.ClusterName, strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1123Subdomain(o.ClaimName); len(errs) > 0 {
		return fmt.Errorf("invalid --claim-name %q: %s", o.ClaimName, strings.Join(errs, "; "))
	}
	if o.Render && o.Wait {
		return errors.New("--render prints the EtcdBackup and creates nothing: it cannot --wait")
	}
	return nil
}

// EtcdBackup is the EtcdBackup the options describe.
func (o *CreateOptions) EtcdBackup() *hyperv1.EtcdBackup {
	return &hyperv1.EtcdBackup{
		TypeMeta:   metav1.TypeMeta{APIVersion: hyperv1.GroupVersion.String(), Kind: "EtcdBackup"},
		ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: o.Name},
		Spec: hyperv1.EtcdBackupSpec{
			ClusterName: o.ClusterName,
			Storage:     hyperv1.EtcdBackupStorage{PersistentVolumeClaim: hyperv1.EtcdBackupVolumeClaim{ClaimName: o.ClaimName}},
		},
	}
}

// Run creates (or with --render prints) the EtcdBackup, and with --wait
// waits for its snapshot.
func (o *CreateOptions) Run(ctx context.Context, out io.Writer) error {
	if err := o.validate(); err != nil {
		return err
	}
	backup := o.EtcdBackup()
	if o.Render {
		return install.Render(out, "yaml", []client.Object{backup})
	}
	c, cfg, err := o.kube.Connect()
	if err != nil {
		return err
	}
	hc := &hyperv1.HostedCluster{}
	switch err := c.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.ClusterName}, hc); {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("HostedCluster %s/%s does not exist: name an existing one with --cluster-name (kubectl get hc -n %s)", o.Namespace, o.ClusterName, o.Namespace)
	case err != nil:
		return cli.Explain(cfg.Host, fmt.Errorf("failed to get HostedCluster %s/%s: %w", o.Namespace, o.ClusterName, err))
	}
	switch err := c.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.ClaimName}, &corev1.PersistentVolumeClaim{}); {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("PersistentVolumeClaim %s/%s does not exist: create the claim the snapshot is written to first", o.Namespace, o.ClaimName)
	case err != nil:
		return cli.Explain(cfg.Host, fmt.Errorf("failed to get PersistentVolumeClaim %s/%s: %w", o.Namespace, o.ClaimName, err))
	}
	if err := c.Create(ctx, backup); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("EtcdBackup %s/%s already exists: a backup is taken once; choose another name", o.Namespace, o.Name)
		}
		return cli.Explain(cfg.Host, fmt.Errorf("the API server refused EtcdBackup %s/%s: %w", o.Namespace, o.Name, err))
	}
	_, _ = fmt.Fprintf(out, "EtcdBackup %s/%s created: a snapshot of HostedCluster %s's etcd goes to %s on PersistentVolumeClaim %s\n",
		o.Namespace, o.Name, o.ClusterName, hyperv1.EtcdBackupFileName(o.Name), o.ClaimName)
	if !o.Wait {
		_, _ = fmt.Fprintf(out, "Follow it with kubectl get etcdbackup %s -n %s\n", o.Name, o.Namespace)
		return nil
	}
	return cli.Explain(cfg.Host, o.await(ctx, c, backup, out))
}

// await waits for the backup's Complete condition: True prints the
// snapshot, BackupFailed is the error.
func (o *CreateOptions) await(ctx context.Context, c client.Client, backup *hyperv1.EtcdBackup, out io.Writer) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, time.Second, o.Timeout, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(backup), backup); err != nil {
			return false, nil
		}
		cond := meta.FindStatusCondition(backup.Status.Conditions, hyperv1.EtcdBackupCompleteCondition)
		if cond == nil {
			return false, nil
		}
		last = cond.Message
		switch {
		case cond.Status == metav1.ConditionTrue && backup.Status.Snapshot != nil:
			return true, nil
		case cond.Reason == hyperv1.EtcdBackupFailedReason:
			return false, fmt.Errorf("EtcdBackup %s/%s failed: %s", backup.Namespace, backup.Name, cond.Message)
		}
		return false, nil
	})
	if err != nil {
		if wait.Interrupted(err) {
			return fmt.Errorf("EtcdBackup %s/%s was not complete after %s: %s", backup.Namespace, backup.Name, o.Timeout, last)
		}
		return err
	}
	s := backup.Status.Snapshot
	_, _ = fmt.Fprintf(out, "Snapshot written: %s on PersistentVolumeClaim %s, etcd revision %d, %d bytes, sha256 %s, from member %s\n",
		s.FileName, o.ClaimName, s.Revision, s.SizeBytes, s.SHA256, s.Member)
	return nil
}
