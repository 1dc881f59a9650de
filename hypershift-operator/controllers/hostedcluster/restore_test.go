package hostedcluster_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/controllers/etcdbackup"
	"github.com/hypershift-le/hypershift/support/conditions"
	"github.com/hypershift-le/hypershift/support/testutil"
)

// TestRestoreWaitsForItsBackupAndCreatesNothingBefore: a HostedCluster
// created from an EtcdBackup that does not exist, then from one that is
// not complete, says so in EtcdSnapshotRestored and gets no control-plane
// namespace; once the backup is complete, a Job beside it checks and
// serves the snapshot, and only when that pod is ready (the file checked)
// is the control plane created, its HostedControlPlane naming the backup
// and its namespace given the transfer (with the serving pod's URL) and
// the backup's encryption configuration.
func TestRestoreWaitsForItsBackupAndCreatesNothingBefore(t *testing.T) {
	startOperator(t, nil)
	c := newCluster(t, "4.17.0", func(hc *hyperv1.HostedCluster) {
		hc.Spec.Etcd.RestoreFrom = &hyperv1.EtcdRestoreSource{EtcdBackup: hyperv1.LocalObjectReference{Name: "nightly"}}
	})
	ns := c.controlPlaneNamespace()
	expectRestored(t, c, metav1.ConditionFalse, hyperv1.EtcdBackupNotFoundReason, "EtcdBackup nightly not found in namespace "+c.hc.Namespace)
	expectNoNamespace(t, ns)

	backup := &hyperv1.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.hc.Namespace, Name: "nightly"},
		Spec: hyperv1.EtcdBackupSpec{
			ClusterName: "old",
			Storage:     hyperv1.EtcdBackupStorage{PersistentVolumeClaim: hyperv1.EtcdBackupVolumeClaim{ClaimName: "backups"}},
		},
	}
	if err := env.Client.Create(t.Context(), backup); err != nil {
		t.Fatal(err)
	}
	conditions.Set(&backup.Status.Conditions, backup.Generation, hyperv1.EtcdBackupCompleteCondition, metav1.ConditionFalse, hyperv1.EtcdBackupInProgressReason, "taking a snapshot of etcd")
	if err := env.Client.Status().Update(t.Context(), backup); err != nil {
		t.Fatal(err)
	}
	// The operator retries a cluster waiting on its user with a backoff;
	// a change of the cluster starts a pass at once.
	touch(t, c)
	expectRestored(t, c, metav1.ConditionFalse, hyperv1.EtcdBackupIncompleteReason, "EtcdBackup nightly has no snapshot (taking a snapshot of etcd)")
	expectNoNamespace(t, ns)

	config := "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\n"
	if err := env.Client.Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.hc.Namespace, Name: "nightly-encryption-config"},
		Data:       map[string][]byte{"config.yaml": []byte(config)},
	}); err != nil {
		t.Fatal(err)
	}
	sum := strings.Repeat("ab", 32)
	backup.Status.Snapshot = &hyperv1.EtcdSnapshot{FileName: "nightly.db", Revision: 42, SizeBytes: 4096, SHA256: sum, Member: "etcd-0",
		EncryptionConfigSecret: "nightly-encryption-config", CompletionTime: metav1.Now()}
	conditions.Set(&backup.Status.Conditions, backup.Generation, hyperv1.EtcdBackupCompleteCondition, metav1.ConditionTrue, hyperv1.EtcdBackupSucceededReason, "written")
	if err := env.Client.Status().Update(t.Context(), backup); err != nil {
		t.Fatal(err)
	}
	touch(t, c)
	expectRestored(t, c, metav1.ConditionFalse, hyperv1.EtcdSnapshotRestoringReason, "Checking the snapshot of EtcdBackup nightly (revision 42, 4096 bytes)")
	serve := &batchv1.Job{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: c.hc.Namespace, Name: etcdbackup.RestoreJobName("demo")}, serve); err != nil {
		t.Fatal(err)
	}
	args := strings.Join(serve.Spec.Template.Spec.Containers[0].Args, " ")
	for _, want := range []string{"serve", "--file=/backup/nightly.db", "--expect-sha256=" + sum, "--downloads=3"} {
		if !strings.Contains(args, want) {
			t.Errorf("the serving Job's args %q lack %q", args, want)
		}
	}
	expectNoNamespace(t, ns)

	pod := restoreJobPod(t, serve)
	now := metav1.Now()
	pod.Status = corev1.PodStatus{
		Phase: corev1.PodRunning, PodIP: "10.9.8.7", PodIPs: []corev1.PodIP{{IP: "10.9.8.7"}}, StartTime: &now,
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}},
	}
	if err := env.Client.Status().Update(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, converge, func() error {
		hcp := &hyperv1.HostedControlPlane{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "demo"}, hcp); err != nil {
			return err
		}
		if from := hcp.Spec.Etcd.RestoreFrom; from == nil || from.EtcdBackup.Name != "nightly" {
			return fmt.Errorf("the HostedControlPlane's etcd.restoreFrom is %+v", from)
		}
		transfer := &corev1.Secret{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: hyperv1.EtcdRestoreTransferSecret}, transfer); err != nil {
			return err
		}
		if url := string(transfer.Data["url"]); url != "https://10.9.8.7:8443/snapshot" || len(transfer.Data["token"]) == 0 || len(transfer.Data["tls.key"]) != 0 {
			return fmt.Errorf("the members' transfer has url %q, keys %d", url, len(transfer.Data))
		}
		keys := &corev1.Secret{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: hyperv1.EtcdRestoreEncryptionConfigSecret}, keys); err != nil {
			return err
		}
		if string(keys.Data["config.yaml"]) != config {
			return errors.New("the backup's encryption configuration was not copied")
		}
		return nil
	})
	expectRestored(t, c, metav1.ConditionFalse, hyperv1.EtcdSnapshotRestoringReason, "Etcd restores from EtcdBackup nightly")
}

// TestARefusedSnapshotCreatesNothing: when the serving Job refuses the
// snapshot file (its check failed), EtcdSnapshotRestored says so with the
// Job's own words, and no control-plane namespace is created.
func TestARefusedSnapshotCreatesNothing(t *testing.T) {
	startOperator(t, nil)
	c := newCluster(t, "4.17.0", func(hc *hyperv1.HostedCluster) {
		hc.Spec.Etcd.RestoreFrom = &hyperv1.EtcdRestoreSource{EtcdBackup: hyperv1.LocalObjectReference{Name: "corrupt"}}
	})
	backup := &hyperv1.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.hc.Namespace, Name: "corrupt"},
		Spec: hyperv1.EtcdBackupSpec{
			ClusterName: "old",
			Storage:     hyperv1.EtcdBackupStorage{PersistentVolumeClaim: hyperv1.EtcdBackupVolumeClaim{ClaimName: "backups"}},
		},
	}
	if err := env.Client.Create(t.Context(), backup); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.hc.Namespace, Name: "corrupt-encryption-config"},
		Data:       map[string][]byte{"config.yaml": []byte("kind: EncryptionConfiguration\n")},
	}); err != nil {
		t.Fatal(err)
	}
	backup.Status.Snapshot = &hyperv1.EtcdSnapshot{FileName: "corrupt.db", Revision: 7, SizeBytes: 4096, SHA256: strings.Repeat("cd", 32),
		EncryptionConfigSecret: "corrupt-encryption-config", CompletionTime: metav1.Now()}
	conditions.Set(&backup.Status.Conditions, backup.Generation, hyperv1.EtcdBackupCompleteCondition, metav1.ConditionTrue, hyperv1.EtcdBackupSucceededReason, "written")
	if err := env.Client.Status().Update(t.Context(), backup); err != nil {
		t.Fatal(err)
	}
	touch(t, c)
	serve := &batchv1.Job{}
	testutil.Eventually(t, converge, func() error {
		return env.Client.Get(t.Context(), client.ObjectKey{Namespace: c.hc.Namespace, Name: etcdbackup.RestoreJobName("demo")}, serve)
	})
	pod := restoreJobPod(t, serve)
	now := metav1.Now()
	message := "snapshot /backup/corrupt.db is corrupt: its sha256 is 00, the backup recorded cdcd"
	pod.Status = corev1.PodStatus{Phase: corev1.PodFailed, StartTime: &now, ContainerStatuses: []corev1.ContainerStatus{{
		Name: "etcd-snapshot", Image: "x", ImageID: "x",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Message: message, StartedAt: now, FinishedAt: now}},
	}}}
	if err := env.Client.Status().Update(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	expectRestored(t, c, metav1.ConditionFalse, hyperv1.EtcdSnapshotRefusedReason, "The snapshot of EtcdBackup corrupt was refused: "+message+"; nothing was created")
	expectNoNamespace(t, c.controlPlaneNamespace())
	hc := c.get(t)
	if a := meta.FindStatusCondition(hc.Status.Conditions, hyperv1.Available); a == nil || a.Status != metav1.ConditionFalse || a.Reason != hyperv1.EtcdSnapshotRefusedReason {
		t.Errorf("Available %+v: want False with the refusal", a)
	}
}

func expectRestored(t *testing.T, c *cluster, status metav1.ConditionStatus, reason, message string) {
	t.Helper()
	testutil.Eventually(t, converge, func() error {
		cond := meta.FindStatusCondition(c.get(t).Status.Conditions, hyperv1.EtcdSnapshotRestored)
		if cond == nil || cond.Status != status || cond.Reason != reason || !strings.Contains(cond.Message, message) {
			return fmt.Errorf("EtcdSnapshotRestored %+v: want %s, %s, %q", cond, status, reason, message)
		}
		return nil
	})
}

func expectNoNamespace(t *testing.T, ns string) {
	t.Helper()
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: ns}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		t.Fatalf("control-plane namespace %s: %v, want none", ns, err)
	}
}

// touch changes the HostedCluster's annotations, which starts a pass.
func touch(t *testing.T, c *cluster) {
	t.Helper()
	hc := c.get(t)
	patch := client.MergeFrom(hc.DeepCopy())
	if hc.Annotations == nil {
		hc.Annotations = map[string]string{}
	}
	hc.Annotations["test.hypershift.openshift.io/touched"] = metav1.Now().String()
	if err := env.Client.Patch(t.Context(), hc, patch); err != nil {
		t.Fatal(err)
	}
}

func restoreJobPod(t *testing.T, job *batchv1.Job) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	testutil.Eventually(t, converge, func() error {
		pods := &corev1.PodList{}
		if err := env.Client.List(t.Context(), pods, client.InNamespace(job.Namespace), client.MatchingLabels{batchv1.JobNameLabel: job.Name}); err != nil {
			return err
		}
		if len(pods.Items) == 0 {
			return fmt.Errorf("job %s has no pod yet", job.Name)
		}
		pod = &pods.Items[0]
		return nil
	})
	return pod
}
