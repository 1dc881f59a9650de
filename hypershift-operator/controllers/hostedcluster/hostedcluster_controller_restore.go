package hostedcluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/controllers/etcdbackup"
	"github.com/hypershift-le/hypershift/hypershift-operator/render"
)

// restorePoll is how often a pass looks again while the snapshot is being
// checked: the HostedCluster controller hears the restore Jobs, not their
// pods, and the serving pod's readiness is what it waits for.
const restorePoll = 2 * time.Second

// restoreDownloads is how many downloads the serving Job of a restore
// serves per member: a member whose init container is restarted before it
// finished downloads again.
const restoreDownloads = 3

// reconcileRestore prepares, for a HostedCluster created with
// spec.etcd.restoreFrom, the snapshot its etcd members restore from, before
// anything of its control plane is created. The EtcdBackup must exist and
// be complete, and its encryption configuration (the keys that read its
// Secrets) must be there; otherwise the pass stops, EtcdSnapshotRestored
// says why, and it is looked at again with waitBackoff's delays. A Job
// beside the backup's claim then checks the snapshot file (its SHA-256,
// etcd's own hash) and serves it; a refused file stops the pass for good
// (the HostedCluster must change). Once it serves, the pass goes on with
// what the members restore with (s.restore). Once the cluster was first
// available (EtcdSnapshotRestored=True) the serving Job and the transfer
// Secrets are deleted, and the backup is not read again.
func (r *Reconciler) reconcileRestore(ctx context.Context, s *scope) (ctrl.Result, error) {
	from := s.hc.Spec.Etcd.RestoreFrom
	if from == nil {
		return ctrl.Result{}, nil
	}
	if meta.IsStatusConditionTrue(s.original.Status.Conditions, hyperv1.EtcdSnapshotRestored) {
		return ctrl.Result{}, r.cleanUpRestore(ctx, s)
	}
	if started, err := r.restoreStarted(ctx, s); err != nil || started {
		return ctrl.Result{}, err
	}
	name := from.EtcdBackup.Name
	backup := &hyperv1.EtcdBackup{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.hc.Namespace, Name: name}, backup); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, blockRestore(s, hyperv1.EtcdBackupNotFoundReason,
				fmt.Sprintf("EtcdBackup %s not found in namespace %s: the cluster's etcd starts only from the snapshot spec.etcd.restoreFrom names, and nothing is created until it exists", name, s.hc.Namespace), waitsOnUser)
		}
		return ctrl.Result{}, err
	}
	snapshot := backup.Status.Snapshot
	if !meta.IsStatusConditionTrue(backup.Status.Conditions, hyperv1.EtcdBackupCompleteCondition) || snapshot == nil {
		why := "it has not started"
		if c := meta.FindStatusCondition(backup.Status.Conditions, hyperv1.EtcdBackupCompleteCondition); c != nil {
			why = c.Message
		}
		return ctrl.Result{}, blockRestore(s, hyperv1.EtcdBackupIncompleteReason,
			fmt.Sprintf("EtcdBackup %s has no snapshot (%s); nothing is created until it is complete", name, why), waitsOnUser)
	}
	keys := &corev1.Secret{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.hc.Namespace, Name: snapshot.EncryptionConfigSecret}, keys); err != nil || len(keys.Data["config.yaml"]) == 0 {
		if err != nil && !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		return ctrl.Result{}, blockRestore(s, hyperv1.EtcdBackupIncompleteReason,
			fmt.Sprintf("Secret %s, the encryption configuration of EtcdBackup %s, is missing or empty: without it the Secrets in the snapshot cannot be read; nothing is created", snapshot.EncryptionConfigSecret, name), waitsOnUser)
	}

	transfer, err := r.restoreTransfer(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	serve := &batchv1.Job{}
	err = r.Client.Get(ctx, client.ObjectKey{Namespace: s.hc.Namespace, Name: etcdbackup.RestoreJobName(s.hc.Name)}, serve)
	if apierrors.IsNotFound(err) {
		members := 1
		if s.hc.Spec.ControllerAvailabilityPolicy == hyperv1.HighlyAvailable {
			members = 3
		}
		serve = etcdbackup.RestoreServeJob(s.hc, backup, r.controlPlaneOperatorImage(s), members*restoreDownloads)
		if err := r.Client.Create(ctx, serve); err != nil && !apierrors.IsAlreadyExists(err) {
			return ctrl.Result{}, fmt.Errorf("failed to create Job %s/%s: %w", serve.Namespace, serve.Name, err)
		}
	} else if err != nil {
		return ctrl.Result{}, err
	}
	if etcdbackup.JobFailed(serve) {
		return ctrl.Result{}, blockRestore(s, hyperv1.EtcdSnapshotRefusedReason,
			fmt.Sprintf("The snapshot of EtcdBackup %s was refused: %s; nothing was created. Create the HostedCluster again from another backup", name, etcdbackup.TerminationMessage(ctx, r.APIReader, serve)), waitsForChange)
	}
	address, err := etcdbackup.ReadyPodAddress(ctx, r.APIReader, serve)
	if err != nil {
		return ctrl.Result{}, err
	}
	if address == "" {
		return ctrl.Result{RequeueAfter: restorePoll}, s.block(hyperv1.EtcdSnapshotRestored, hyperv1.EtcdSnapshotRestoringReason,
			fmt.Sprintf("Checking the snapshot of EtcdBackup %s (revision %d, %d bytes) before the control plane is created", name, snapshot.Revision, snapshot.SizeBytes), notWaiting, nil)
	}
	s.restore = &render.EtcdRestore{Transfer: etcdbackup.MemberTransfer(transfer, address), EncryptionConfig: keys.Data["config.yaml"]}
	s.restoreMessage = "etcd restores from EtcdBackup " + name
	return ctrl.Result{}, nil
}

// restoreStarted reports whether the members were given what they
// restore with (the copies in the control-plane namespace, read from the
// cache, which holds the HO's copies): from then on the pass gives them
// the same, without reading the backup or the serving Job again, which
// may end (its downloads served, or its deadline) before the cluster is
// first available.
func (r *Reconciler) restoreStarted(ctx context.Context, s *scope) (bool, error) {
	if r.cache == nil {
		return false, nil
	}
	transfer, keys := &corev1.Secret{}, &corev1.Secret{}
	for name, secret := range map[string]*corev1.Secret{hyperv1.EtcdRestoreTransferSecret: transfer, hyperv1.EtcdRestoreEncryptionConfigSecret: keys} {
		if err := r.cache.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: name}, secret); err != nil {
			return false, client.IgnoreNotFound(err)
		}
	}
	s.restore = &render.EtcdRestore{Transfer: transfer.Data, EncryptionConfig: keys.Data["config.yaml"]}
	s.restoreMessage = "etcd restores from EtcdBackup " + s.hc.Spec.Etcd.RestoreFrom.EtcdBackup.Name
	return true, nil
}

// blockRestore stops the pass on EtcdSnapshotRestored=False with reason
// and message; the pass ends with the message as its error (exit does not
// log or back off on it: it waits on the user or for a change).
func blockRestore(s *scope, reason, message string, wait waitKind) error {
	return s.block(hyperv1.EtcdSnapshotRestored, reason, message, wait, errors.New(message))
}

// restoreTransfer returns the serving side's transfer, made once.
func (r *Reconciler) restoreTransfer(ctx context.Context, s *scope) (map[string][]byte, error) {
	secret := &corev1.Secret{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.hc.Namespace, Name: etcdbackup.RestoreTransferSecretName(s.hc.Name)}, secret)
	if err == nil {
		return secret.Data, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, err
	}
	data, err := etcdbackup.NewTransfer(r.now())
	if err != nil {
		return nil, err
	}
	secret = etcdbackup.RestoreTransferSecret(s.hc, data)
	if err := r.Client.Create(ctx, secret); err != nil {
		return nil, fmt.Errorf("failed to create Secret %s/%s: %w", secret.Namespace, secret.Name, err)
	}
	return data, nil
}

// cleanUpRestore deletes, once the cluster was restored, the serving Job
// and the transfer Secrets, the Job last: a pass that finds no Job (the
// cache holds the restore Jobs) has nothing to do.
func (r *Reconciler) cleanUpRestore(ctx context.Context, s *scope) error {
	job := &batchv1.Job{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.hc.Namespace, Name: etcdbackup.RestoreJobName(s.hc.Name)}, job); err != nil {
		return client.IgnoreNotFound(err)
	}
	for _, obj := range []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: hyperv1.EtcdRestoreTransferSecret}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.hc.Namespace, Name: etcdbackup.RestoreTransferSecretName(s.hc.Name)}},
		job,
	} {
		if err := r.Client.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("failed to delete %s/%s after the restore: %w", obj.GetNamespace(), obj.GetName(), err)
		}
	}
	return nil
}

// restoredThisPass reports whether this pass's status is the first to say
// the restore is done (cleanUpRestore waits for a pass that starts from it).
func restoredThisPass(s *scope) bool {
	return s.hc.Spec.Etcd.RestoreFrom != nil &&
		!meta.IsStatusConditionTrue(s.original.Status.Conditions, hyperv1.EtcdSnapshotRestored) &&
		meta.IsStatusConditionTrue(s.hc.Status.Conditions, hyperv1.EtcdSnapshotRestored)
}

// setRestore shows a restore under way, and its end once the cluster is
// available. A restore that stopped the pass shows through setBlocked.
func setRestore(s *scope) {
	if s.hc.Spec.Etcd.RestoreFrom == nil || s.blocked != nil {
		return
	}
	if meta.IsStatusConditionTrue(s.original.Status.Conditions, hyperv1.EtcdSnapshotRestored) {
		return
	}
	if s.restoreMessage == "" {
		return
	}
	if meta.IsStatusConditionTrue(s.hc.Status.Conditions, hyperv1.Available) {
		s.set(hyperv1.EtcdSnapshotRestored, metav1.ConditionTrue, hyperv1.EtcdSnapshotRestoredReason, upperFirst(s.restoreMessage)+": restored")
		return
	}
	s.set(hyperv1.EtcdSnapshotRestored, metav1.ConditionFalse, hyperv1.EtcdSnapshotRestoringReason, upperFirst(s.restoreMessage))
}
