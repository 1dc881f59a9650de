package etcdbackup

import (
	"fmt"
	"net"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
)

// TransferURLKey is the key that holds the snapshot's URL in the transfer
// a restoring cluster's members mount (the etcdsnapshot package's name).
const TransferURLKey = "url"

// RestoreJobName names the Job, beside a HostedCluster created from an
// EtcdBackup, that checks the backup's snapshot and serves it to the
// cluster's etcd members.
func RestoreJobName(cluster string) string { return "etcd-restore-" + cluster }

// RestoreTransferSecretName names that Job's transfer Secret.
func RestoreTransferSecretName(cluster string) string { return "etcd-restore-" + cluster + "-transfer" }

// NewTransfer returns the data of a new transfer: a self-signed
// certificate and its key, and a bearer token.
func NewTransfer(now time.Time) (map[string][]byte, error) { return newTransfer(now) }

// RestoreTransferSecret is the serving side's transfer Secret of a
// restore, owned by the HostedCluster.
func RestoreTransferSecret(hc *hyperv1.HostedCluster, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: RestoreTransferSecretName(hc.Name), Namespace: hc.Namespace,
			Labels:          map[string]string{BackupLabel: hc.Spec.Etcd.RestoreFrom.EtcdBackup.Name},
			OwnerReferences: []metav1.OwnerReference{clusterOwner(hc)},
		},
		Type: corev1.SecretTypeOpaque,
		Data: data,
	}
}

// MemberTransfer is what the members are given of a serving side's
// transfer: the certificate to pin, the token, and the snapshot's URL at
// the serving pod's address.
func MemberTransfer(data map[string][]byte, address string) map[string][]byte {
	return map[string][]byte{
		TransferCertKey:  data[TransferCertKey],
		TransferTokenKey: data[TransferTokenKey],
		TransferURLKey:   []byte("https://" + net.JoinHostPort(address, strconv.Itoa(TransferPort)) + TransferPath),
	}
}

// RestoreServeJob renders the Job that serves backup's snapshot to hc's
// etcd members from the backup's claim, mounted read-only: `etcd-snapshot
// serve --file` checks the file against the backup's SHA-256 and etcd's
// own hash before it listens (a refusal fails the Job with its reason),
// and serves it downloads times. It is labelled with the backup's name, so
// the manager's cache of Jobs holds it.
func RestoreServeJob(hc *hyperv1.HostedCluster, backup *hyperv1.EtcdBackup, image string, downloads int) *batchv1.Job {
	c := container(image, []string{
		snapshotCmd, "serve",
		"--file=" + backupDir + "/" + backup.Status.Snapshot.FileName,
		"--expect-sha256=" + backup.Status.Snapshot.SHA256,
		"--transfer-dir=" + transferDir,
		fmt.Sprintf("--listen=:%d", TransferPort),
		fmt.Sprintf("--downloads=%d", downloads),
	})
	c.Ports = []corev1.ContainerPort{{Name: "transfer", ContainerPort: TransferPort, Protocol: corev1.ProtocolTCP}}
	c.ReadinessProbe = readiness()
	c.VolumeMounts = []corev1.VolumeMount{
		{Name: "transfer", MountPath: transferDir, ReadOnly: true},
		{Name: "backup", MountPath: backupDir, ReadOnly: true},
	}
	volumes := []corev1.Volume{
		secretVolume("transfer", RestoreTransferSecretName(hc.Name)),
		{Name: "backup", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
			ClaimName: backup.Spec.Storage.PersistentVolumeClaim.ClaimName, ReadOnly: true,
		}}},
	}
	j := job(backup, hc.Namespace, c, volumes, []corev1.LocalObjectReference{{Name: hc.Spec.PullSecret.Name}})
	j.Name = RestoreJobName(hc.Name)
	// A restore waits for every member, which may start late.
	j.Spec.ActiveDeadlineSeconds = ptr.To(int64(restoreDeadline))
	j.OwnerReferences = []metav1.OwnerReference{clusterOwner(hc)}
	return j
}

// restoreDeadline bounds a restore's serving Job: the members download
// once their pods are scheduled and their claims bound.
const restoreDeadline = 60 * 60

func clusterOwner(hc *hyperv1.HostedCluster) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: hyperv1.GroupVersion.String(), Kind: "HostedCluster",
		Name: hc.Name, UID: hc.UID, Controller: ptr.To(true),
	}
}
