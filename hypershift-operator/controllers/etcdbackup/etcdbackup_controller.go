// Package etcdbackup is the hypershift-operator's EtcdBackup controller. An
// EtcdBackup takes one snapshot of a HostedCluster's etcd and writes it to a
// PersistentVolumeClaim beside the HostedCluster. Two Jobs of the
// control-plane-operator's image carry it, because etcd's client
// certificate never leaves the control-plane namespace and the claim never
// leaves the user's: a Job in the control-plane namespace takes the
// snapshot (`etcd-snapshot serve`, etcdctl snapshot save's semantics) and
// serves it once over TLS to a Job beside the claim (`etcd-snapshot
// receive`), which checks its SHA-256 and writes it. The transfer is
// authenticated both ways by a Secret made for this backup alone: a
// certificate the receiver pins and a bearer token. The receiver's
// termination message (revision, size, SHA-256, member) becomes the
// EtcdBackup's status; then the Jobs and the transfer Secrets are deleted.
// A failure is final and said in the Complete condition; a new EtcdBackup
// takes a new snapshot.
package etcdbackup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/render"
	"github.com/hypershift-le/hypershift/support/conditions"
	"github.com/hypershift-le/hypershift/support/leaderelection"
)

// Finalizer keeps an EtcdBackup until the objects made for it in the
// control-plane namespace, which no owner reference can reach, are gone.
const Finalizer = "hypershift.openshift.io/etcd-backup"

// claimPoll is how often a backup waiting for its claim looks again: the
// operator does not watch claims.
const claimPoll = 10 * time.Second

// Reconciler reconciles EtcdBackups.
type Reconciler struct {
	Client client.Client
	// APIReader reads what the manager does not cache: claims, the etcd
	// client Service, and the Jobs' pods.
	APIReader client.Reader
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Shard, when a part, limits the controller to the EtcdBackups of the
	// HostedClusters of that shard (leaderelection.AddShards).
	Shard leaderelection.Shard
	// OperatorShard, when the shards are fenced, is the shard's
	// OperatorShardLabel value, which the EtcdBackups carry for its fence
	// (render.SetOperatorShard); "" otherwise.
	OperatorShard string
}

// AddCacheOptions limits the manager's cache of Jobs to those made for
// EtcdBackups.
func AddCacheOptions(opts *cache.Options) {
	if opts.ByObject == nil {
		opts.ByObject = map[client.Object]cache.ByObject{}
	}
	req, err := labels.NewRequirement(BackupLabel, selection.Exists, nil)
	if err != nil {
		panic(err)
	}
	opts.ByObject[&batchv1.Job{}] = cache.ByObject{Label: labels.NewSelector().Add(*req)}
}

// SetupWithManager registers the controller: an EtcdBackup is looked at
// when it changes, when one of its Jobs does, and when its HostedCluster
// does (it waits for the cluster to be available).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(r.Shard.Name("etcdbackup")).
		WithOptions(controller.Options{NewQueue: r.Shard.NewQueue(r.shardKey)}).
		For(&hyperv1.EtcdBackup{}).
		Watches(&batchv1.Job{}, handler.EnqueueRequestsFromMapFunc(backupOfJob)).
		Watches(&hyperv1.HostedCluster{}, handler.EnqueueRequestsFromMapFunc(r.backupsOf)).
		Complete(r)
}

// shardKey is the shard key of an EtcdBackup request: its HostedCluster's,
// from the backup in the manager's cache (its spec is immutable).
func (r *Reconciler) shardKey(ctx context.Context, req reconcile.Request) (string, bool) {
	backup := &hyperv1.EtcdBackup{}
	if err := r.Client.Get(ctx, req.NamespacedName, backup); err != nil {
		return "", false
	}
	return hyperv1.HostedClusterShardKey(backup.Namespace, backup.Spec.ClusterName), true
}

// backupOfJob maps a Job to its EtcdBackup: by annotation in a
// control-plane namespace, by label beside the EtcdBackup.
func backupOfJob(_ context.Context, obj client.Object) []reconcile.Request {
	if owner, ok := obj.GetAnnotations()[ownerAnnotation]; ok {
		if namespace, name, found := strings.Cut(owner, "/"); found {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: namespace, Name: name}}}
		}
		return nil
	}
	if name, ok := obj.GetLabels()[BackupLabel]; ok {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}}}
	}
	return nil
}

// backupsOf maps a HostedCluster to the unfinished EtcdBackups naming it.
func (r *Reconciler) backupsOf(ctx context.Context, obj client.Object) []reconcile.Request {
	backups := &hyperv1.EtcdBackupList{}
	if err := r.Client.List(ctx, backups, client.InNamespace(obj.GetNamespace())); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, b := range backups.Items {
		if b.Spec.ClusterName == obj.GetName() && !finished(&b) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: b.Namespace, Name: b.Name}})
		}
	}
	return out
}

// finished reports whether the backup completed or failed for good.
func finished(b *hyperv1.EtcdBackup) bool {
	c := meta.FindStatusCondition(b.Status.Conditions, hyperv1.EtcdBackupCompleteCondition)
	return c != nil && (c.Status == metav1.ConditionTrue || c.Reason == hyperv1.EtcdBackupFailedReason)
}

// Reconcile moves one EtcdBackup a step on.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	backup := &hyperv1.EtcdBackup{}
	if err := r.Client.Get(ctx, req.NamespacedName, backup); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !r.Shard.Has(hyperv1.HostedClusterShardKey(backup.Namespace, backup.Spec.ClusterName)) {
		return ctrl.Result{}, nil // let in while not in the cache: another shard's
	}
	controlPlane := hyperv1.ControlPlaneNamespace(backup.Namespace, backup.Spec.ClusterName)
	if !backup.DeletionTimestamp.IsZero() || finished(backup) {
		// The finalizer says whether something may be left: a finished
		// backup without it costs no request.
		if !controllerutil.ContainsFinalizer(backup, Finalizer) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, r.cleanUp(ctx, backup, controlPlane)
	}
	if !controllerutil.ContainsFinalizer(backup, Finalizer) || render.OperatorShardDiffers(backup, r.OperatorShard) {
		patch := client.MergeFrom(backup.DeepCopy())
		controllerutil.AddFinalizer(backup, Finalizer)
		render.SetOperatorShard(backup, r.OperatorShard)
		if err := r.Client.Patch(ctx, backup, patch); err != nil {
			return ctrl.Result{}, fmt.Errorf("failed to add the finalizer to EtcdBackup %s: %w", req, err)
		}
	}
	original := backup.DeepCopy()
	result, err := r.step(ctx, backup, controlPlane)
	if !equality.Semantic.DeepEqual(original.Status, backup.Status) {
		if perr := r.Client.Status().Patch(ctx, backup, client.MergeFrom(original)); perr != nil {
			return ctrl.Result{}, errors.Join(err, fmt.Errorf("failed to update the status of EtcdBackup %s: %w", req, perr))
		}
	}
	if err == nil && finished(backup) {
		return ctrl.Result{}, r.cleanUp(ctx, backup, controlPlane)
	}
	return result, err
}

// step takes the backup as far as it can go now, saying where it is in
// its Complete condition.
func (r *Reconciler) step(ctx context.Context, backup *hyperv1.EtcdBackup, controlPlane string) (ctrl.Result, error) {
	hc := &hyperv1.HostedCluster{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: backup.Namespace, Name: backup.Spec.ClusterName}, hc); err != nil {
		if apierrors.IsNotFound(err) {
			waiting(backup, fmt.Sprintf("HostedCluster %s not found in namespace %s; the backup starts once it exists and is available", backup.Spec.ClusterName, backup.Namespace))
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if !hc.DeletionTimestamp.IsZero() {
		failed(backup, fmt.Sprintf("HostedCluster %s is being deleted", hc.Name))
		return ctrl.Result{}, nil
	}
	if available := meta.FindStatusCondition(hc.Status.Conditions, hyperv1.Available); available == nil || available.Status != metav1.ConditionTrue {
		why := "it reports no Available condition yet"
		if available != nil {
			why = available.Message
		}
		waiting(backup, fmt.Sprintf("waiting for HostedCluster %s to be available: %s", hc.Name, why))
		return ctrl.Result{}, nil
	}
	claim := backup.Spec.Storage.PersistentVolumeClaim.ClaimName
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: backup.Namespace, Name: claim}, &corev1.PersistentVolumeClaim{}); err != nil {
		if apierrors.IsNotFound(err) {
			waiting(backup, fmt.Sprintf("PersistentVolumeClaim %s not found in namespace %s; the backup starts once it exists", claim, backup.Namespace))
			return ctrl.Result{RequeueAfter: claimPoll}, nil
		}
		return ctrl.Result{}, err
	}
	if err := r.ensureTransfer(ctx, backup, controlPlane); err != nil {
		return ctrl.Result{}, err
	}

	serve := &batchv1.Job{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: controlPlane, Name: JobName(backup.Name)}, serve)
	if apierrors.IsNotFound(err) {
		return ctrl.Result{}, r.createServeJob(ctx, backup, controlPlane)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if JobFailed(serve) {
		failed(backup, "taking the snapshot failed: "+TerminationMessage(ctx, r.APIReader, serve))
		return ctrl.Result{}, nil
	}

	receive := &batchv1.Job{}
	err = r.Client.Get(ctx, types.NamespacedName{Namespace: backup.Namespace, Name: JobName(backup.Name)}, receive)
	if apierrors.IsNotFound(err) {
		return r.createReceiveJob(ctx, backup, hc, serve)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	switch {
	case JobFailed(receive):
		failed(backup, fmt.Sprintf("writing the snapshot to PersistentVolumeClaim %s failed: %s", claim, TerminationMessage(ctx, r.APIReader, receive)))
	case jobSucceeded(receive):
		return ctrl.Result{}, r.complete(ctx, backup, receive)
	default:
		inProgress(backup, fmt.Sprintf("writing the snapshot to PersistentVolumeClaim %s", claim))
	}
	return ctrl.Result{}, nil
}

// ensureTransfer makes the transfer's Secrets: the control-plane
// namespace's is the source, the one beside the backup its copy without
// the key.
func (r *Reconciler) ensureTransfer(ctx context.Context, backup *hyperv1.EtcdBackup, controlPlane string) error {
	source := &corev1.Secret{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: controlPlane, Name: TransferSecretName(backup.Name)}, source)
	switch {
	case apierrors.IsNotFound(err):
		data, err := newTransfer(r.now())
		if err != nil {
			return err
		}
		source, _ = transferSecrets(backup, controlPlane, data)
		if err := r.Client.Create(ctx, source); err != nil {
			return fmt.Errorf("failed to create Secret %s/%s: %w", controlPlane, source.Name, err)
		}
	case err != nil:
		return err
	}
	_, want := transferSecrets(backup, controlPlane, source.Data)
	copied := &corev1.Secret{}
	err = r.Client.Get(ctx, client.ObjectKeyFromObject(want), copied)
	switch {
	case apierrors.IsNotFound(err):
		if err := r.Client.Create(ctx, want); err != nil {
			return fmt.Errorf("failed to create Secret %s/%s: %w", want.Namespace, want.Name, err)
		}
	case err != nil:
		return err
	case !equality.Semantic.DeepEqual(copied.Data, want.Data):
		copied.Data = want.Data
		if err := r.Client.Update(ctx, copied); err != nil {
			return fmt.Errorf("failed to update Secret %s/%s: %w", want.Namespace, want.Name, err)
		}
	}
	return nil
}

// createServeJob makes the Job that takes the snapshot, with the image
// the cluster's control-plane-operator runs (its nodes have it) and that
// Deployment's pull secrets.
func (r *Reconciler) createServeJob(ctx context.Context, backup *hyperv1.EtcdBackup, controlPlane string) error {
	cpo := &appsv1.Deployment{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: controlPlane, Name: hyperv1.ControlPlaneOperatorName}, cpo); err != nil {
		return fmt.Errorf("failed to read the control-plane-operator Deployment of %s for its image: %w", controlPlane, err)
	}
	if len(cpo.Spec.Template.Spec.Containers) == 0 {
		return fmt.Errorf("deployment %s/%s has no container to take the image from", controlPlane, cpo.Name)
	}
	etcd := &corev1.Service{}
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: controlPlane, Name: etcdClientService}, etcd); err != nil {
		return fmt.Errorf("failed to read etcd's client Service in %s: %w", controlPlane, err)
	}
	if etcd.Spec.ClusterIP == "" || etcd.Spec.ClusterIP == corev1.ClusterIPNone {
		return fmt.Errorf("service %s/%s has no ClusterIP", controlPlane, etcd.Name)
	}
	if err := r.saveEncryptionConfig(ctx, backup, controlPlane); err != nil {
		return err
	}
	job := serveJob(backup, controlPlane, cpo.Spec.Template.Spec.Containers[0].Image, cpo.Spec.Template.Spec.ImagePullSecrets, etcd.Spec.ClusterIP)
	if err := r.Client.Create(ctx, job); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("failed to create Job %s/%s: %w", controlPlane, job.Name, err)
	}
	inProgress(backup, "taking a snapshot of etcd")
	return nil
}

// encryptionConfig reads the hosted kube-apiserver's
// EncryptionConfiguration in the control-plane namespace.
func (r *Reconciler) encryptionConfig(ctx context.Context, controlPlane string) ([]byte, error) {
	secret := &corev1.Secret{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: controlPlane, Name: encryptionConfigSecret}, secret); err != nil {
		return nil, fmt.Errorf("failed to read the kube-apiserver's encryption configuration (Secret %s/%s): %w", controlPlane, encryptionConfigSecret, err)
	}
	config := secret.Data[encryptionConfigKey]
	if len(config) == 0 {
		return nil, fmt.Errorf("secret %s/%s holds no %s", controlPlane, encryptionConfigSecret, encryptionConfigKey)
	}
	return config, nil
}

// saveEncryptionConfig keeps, beside the backup and owned by it, the
// keys the snapshot's Secrets are encrypted with: the kube-apiserver's
// EncryptionConfiguration just before the snapshot. complete checks that
// it did not change meanwhile.
func (r *Reconciler) saveEncryptionConfig(ctx context.Context, backup *hyperv1.EtcdBackup, controlPlane string) error {
	config, err := r.encryptionConfig(ctx, controlPlane)
	if err != nil {
		return err
	}
	saved := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: backup.Namespace, Name: hyperv1.EtcdBackupEncryptionConfigName(backup.Name),
			Labels: map[string]string{BackupLabel: backup.Name}, OwnerReferences: []metav1.OwnerReference{ownerReference(backup)},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{encryptionConfigKey: config},
	}
	err = r.Client.Create(ctx, saved)
	if apierrors.IsAlreadyExists(err) {
		// Left by a pass that failed before the Job was made.
		existing := &corev1.Secret{}
		if err := r.Client.Get(ctx, client.ObjectKeyFromObject(saved), existing); err != nil {
			return err
		}
		existing.Data = saved.Data
		err = r.Client.Update(ctx, existing)
	}
	if err != nil {
		return fmt.Errorf("failed to save the encryption configuration in Secret %s/%s: %w", saved.Namespace, saved.Name, err)
	}
	return nil
}

// createReceiveJob makes the Job that writes the snapshot, once the
// serving pod is ready (the snapshot taken) and has an address.
func (r *Reconciler) createReceiveJob(ctx context.Context, backup *hyperv1.EtcdBackup, hc *hyperv1.HostedCluster, serve *batchv1.Job) (ctrl.Result, error) {
	inProgress(backup, "taking a snapshot of etcd")
	address, err := ReadyPodAddress(ctx, r.APIReader, serve)
	if err != nil {
		return ctrl.Result{}, err
	}
	if address == "" {
		if serve.Status.Ready != nil && *serve.Status.Ready > 0 {
			// The Job counted the pod ready before this read saw it.
			return ctrl.Result{RequeueAfter: time.Second}, nil
		}
		return ctrl.Result{}, nil
	}
	job := receiveJob(backup, serve.Spec.Template.Spec.Containers[0].Image, hc.Spec.PullSecret.Name, address)
	if err := r.Client.Create(ctx, job); err != nil && !apierrors.IsAlreadyExists(err) {
		return ctrl.Result{}, fmt.Errorf("failed to create Job %s/%s: %w", job.Namespace, job.Name, err)
	}
	inProgress(backup, fmt.Sprintf("writing the snapshot to PersistentVolumeClaim %s", backup.Spec.Storage.PersistentVolumeClaim.ClaimName))
	return ctrl.Result{}, nil
}

// snapshotInfo is what `etcd-snapshot receive` writes to its termination
// message.
type snapshotInfo struct {
	Revision int64  `json:"revision"`
	Size     int64  `json:"size"`
	SHA256   string `json:"sha256"`
	Member   string `json:"member,omitempty"`
}

// complete records the written snapshot from the receiver's termination
// message.
func (r *Reconciler) complete(ctx context.Context, backup *hyperv1.EtcdBackup, receive *batchv1.Job) error {
	message := TerminationMessage(ctx, r.APIReader, receive)
	var info snapshotInfo
	if err := json.Unmarshal([]byte(message), &info); err != nil || info.SHA256 == "" || info.Size <= 0 {
		failed(backup, fmt.Sprintf("the snapshot was written but the writer's report cannot be read (%q); its checksum is unknown, so it cannot be restored from", message))
		return nil
	}
	controlPlane := hyperv1.ControlPlaneNamespace(backup.Namespace, backup.Spec.ClusterName)
	now, err := r.encryptionConfig(ctx, controlPlane)
	if err != nil {
		return err
	}
	saved := &corev1.Secret{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: backup.Namespace, Name: hyperv1.EtcdBackupEncryptionConfigName(backup.Name)}, saved); err != nil {
		return fmt.Errorf("failed to read the saved encryption configuration: %w", err)
	}
	if string(saved.Data[encryptionConfigKey]) != string(now) {
		failed(backup, "the hosted kube-apiserver's encryption keys changed while the snapshot was taken, so the saved keys may not read every Secret in it; create another EtcdBackup")
		return nil
	}
	finishedAt := r.now()
	if t := receive.Status.CompletionTime; t != nil {
		finishedAt = t.Time
	}
	backup.Status.Snapshot = &hyperv1.EtcdSnapshot{
		FileName:               hyperv1.EtcdBackupFileName(backup.Name),
		Revision:               info.Revision,
		SizeBytes:              info.Size,
		SHA256:                 info.SHA256,
		Member:                 info.Member,
		EncryptionConfigSecret: saved.Name,
		CompletionTime:         metav1.NewTime(finishedAt.UTC().Truncate(time.Second)),
	}
	conditions.Set(&backup.Status.Conditions, backup.Generation, hyperv1.EtcdBackupCompleteCondition, metav1.ConditionTrue,
		hyperv1.EtcdBackupSucceededReason, fmt.Sprintf("snapshot of revision %d (%d bytes, taken from member %s) written to %s on PersistentVolumeClaim %s",
			info.Revision, info.Size, info.Member, backup.Status.Snapshot.FileName, backup.Spec.Storage.PersistentVolumeClaim.ClaimName))
	return nil
}

// cleanUp deletes what was made for the backup, then its finalizer. The
// snapshot file stays on the claim.
func (r *Reconciler) cleanUp(ctx context.Context, backup *hyperv1.EtcdBackup, controlPlane string) error {
	background := client.PropagationPolicy(metav1.DeletePropagationBackground)
	objects := []client.Object{
		&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: controlPlane, Name: JobName(backup.Name)}},
		&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: backup.Namespace, Name: JobName(backup.Name)}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: controlPlane, Name: TransferSecretName(backup.Name)}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: backup.Namespace, Name: TransferSecretName(backup.Name)}},
	}
	if c := meta.FindStatusCondition(backup.Status.Conditions, hyperv1.EtcdBackupCompleteCondition); c == nil || c.Status != metav1.ConditionTrue {
		// The keys of no snapshot.
		objects = append(objects, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: backup.Namespace, Name: hyperv1.EtcdBackupEncryptionConfigName(backup.Name)}})
	}
	for _, obj := range objects {
		if err := r.Client.Delete(ctx, obj, background); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("failed to delete %T %s/%s of EtcdBackup %s/%s: %w", obj, obj.GetNamespace(), obj.GetName(), backup.Namespace, backup.Name, err)
		}
	}
	patch := client.MergeFrom(backup.DeepCopy())
	controllerutil.RemoveFinalizer(backup, Finalizer)
	if err := r.Client.Patch(ctx, backup, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("failed to remove the finalizer of EtcdBackup %s/%s: %w", backup.Namespace, backup.Name, err)
	}
	return nil
}

// JobPods lists a Job's pods through reader.
func JobPods(ctx context.Context, reader client.Reader, job *batchv1.Job) ([]corev1.Pod, error) {
	pods := &corev1.PodList{}
	if err := reader.List(ctx, pods, client.InNamespace(job.Namespace), client.MatchingLabels{batchv1.JobNameLabel: job.Name}); err != nil {
		return nil, fmt.Errorf("failed to list the pods of Job %s/%s: %w", job.Namespace, job.Name, err)
	}
	return pods.Items, nil
}

// TerminationMessage is what the Job's container said when it ended, or
// where to look when it said nothing.
func TerminationMessage(ctx context.Context, reader client.Reader, job *batchv1.Job) string {
	fallback := fmt.Sprintf("see kubectl logs -n %s job/%s", job.Namespace, job.Name)
	for _, c := range job.Status.Conditions {
		if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue && c.Reason == batchv1.JobReasonDeadlineExceeded {
			return fmt.Sprintf("it did not finish within %s", time.Duration(deadline)*time.Second)
		}
	}
	pods, err := JobPods(ctx, reader, job)
	if err != nil {
		return fallback
	}
	for _, pod := range pods {
		for _, status := range pod.Status.ContainerStatuses {
			if t := status.State.Terminated; t != nil && strings.TrimSpace(t.Message) != "" {
				return strings.TrimSpace(t.Message)
			}
		}
	}
	return fallback
}

// ReadyPodAddress is the address of the Job's pod once it is ready, ""
// before.
func ReadyPodAddress(ctx context.Context, reader client.Reader, job *batchv1.Job) (string, error) {
	if job.Status.Ready == nil || *job.Status.Ready == 0 {
		return "", nil
	}
	pods, err := JobPods(ctx, reader, job)
	if err != nil {
		return "", err
	}
	for _, pod := range pods {
		if pod.Status.PodIP != "" && podReady(&pod) {
			return pod.Status.PodIP, nil
		}
	}
	return "", nil
}

// JobFailed reports whether the Job ended in failure.
func JobFailed(job *batchv1.Job) bool    { return jobCondition(job, batchv1.JobFailed) }
func jobSucceeded(job *batchv1.Job) bool { return jobCondition(job, batchv1.JobComplete) }

func jobCondition(job *batchv1.Job, t batchv1.JobConditionType) bool {
	for _, c := range job.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func waiting(b *hyperv1.EtcdBackup, message string) {
	conditions.Set(&b.Status.Conditions, b.Generation, hyperv1.EtcdBackupCompleteCondition, metav1.ConditionFalse, hyperv1.EtcdBackupWaitingReason, message)
}

func inProgress(b *hyperv1.EtcdBackup, message string) {
	conditions.Set(&b.Status.Conditions, b.Generation, hyperv1.EtcdBackupCompleteCondition, metav1.ConditionFalse, hyperv1.EtcdBackupInProgressReason, message)
}

func failed(b *hyperv1.EtcdBackup, message string) {
	conditions.Set(&b.Status.Conditions, b.Generation, hyperv1.EtcdBackupCompleteCondition, metav1.ConditionFalse, hyperv1.EtcdBackupFailedReason, message)
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}
