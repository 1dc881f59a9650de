package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EtcdBackupSpec names the HostedCluster whose etcd is backed up and where
// the snapshot is written. A backup is taken once; it cannot be changed:
// create another EtcdBackup for a newer snapshot.
//
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="an EtcdBackup's spec is immutable: create another EtcdBackup for a newer snapshot"
type EtcdBackupSpec struct {
	// clusterName is the name of the HostedCluster, in the EtcdBackup's
	// namespace, whose etcd is backed up.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=61
	// +kubebuilder:validation:XValidation:rule="!format.dns1123Subdomain().validate(self).hasValue()",message="must be the name of a HostedCluster in this namespace: a lowercase RFC 1123 subdomain of at most 61 letters, digits, '-' and '.', starting and ending with a letter or digit"
	ClusterName string `json:"clusterName"`

	// storage is where the snapshot is written.
	//
	// +required
	Storage EtcdBackupStorage `json:"storage"`
}

// EtcdBackupStorage is where a snapshot is written. Only a
// PersistentVolumeClaim of the management cluster is supported.
type EtcdBackupStorage struct {
	// persistentVolumeClaim names a claim in the EtcdBackup's namespace.
	// The snapshot is written at the root of its volume as
	// <EtcdBackup name>.db, and stays there when the EtcdBackup is deleted.
	// An existing file of that name is never overwritten.
	//
	// +required
	PersistentVolumeClaim EtcdBackupVolumeClaim `json:"persistentVolumeClaim"`
}

// EtcdBackupVolumeClaim names a PersistentVolumeClaim.
type EtcdBackupVolumeClaim struct {
	// claimName is the name of the PersistentVolumeClaim.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="!format.dns1123Subdomain().validate(self).hasValue()",message="must be the name of a PersistentVolumeClaim in this namespace: a lowercase RFC 1123 subdomain"
	ClaimName string `json:"claimName"`
}

// EtcdBackupStatus is what the hypershift-operator observed and did.
type EtcdBackupStatus struct {
	// conditions: Complete, True once the snapshot is written and checked,
	// False with the reason the backup waits or failed.
	//
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// snapshot describes the snapshot once it is written.
	//
	// +optional
	Snapshot *EtcdSnapshot `json:"snapshot,omitempty"`
}

// EtcdSnapshot describes a snapshot written by an EtcdBackup.
type EtcdSnapshot struct {
	// fileName is the snapshot's file at the root of the claim's volume.
	//
	// +required
	// +kubebuilder:validation:MaxLength=260
	FileName string `json:"fileName"`

	// revision is the etcd revision the snapshot holds: every write up to
	// it, none after.
	//
	// +required
	Revision int64 `json:"revision"`

	// sizeBytes is the snapshot's size.
	//
	// +required
	SizeBytes int64 `json:"sizeBytes"`

	// sha256 is the hex SHA-256 of the whole file; a restore refuses a
	// file that does not match it.
	//
	// +required
	// +kubebuilder:validation:MaxLength=64
	SHA256 string `json:"sha256"`

	// member is the etcd member the snapshot was taken from.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Member string `json:"member,omitempty"`

	// encryptionConfigSecret names the Secret, beside the EtcdBackup and
	// deleted with it, that holds the hosted kube-apiserver's
	// EncryptionConfiguration (under config.yaml) as it was when the
	// snapshot was taken: the keys the snapshot's Secrets are encrypted
	// with. Without it they cannot be read.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=253
	EncryptionConfigSecret string `json:"encryptionConfigSecret,omitempty"`

	// completionTime is when the snapshot was written.
	//
	// +required
	CompletionTime metav1.Time `json:"completionTime"`
}

// EtcdBackup takes one snapshot of a HostedCluster's etcd, as `etcdctl
// snapshot save` does, and writes it to a PersistentVolumeClaim beside the
// HostedCluster. A HostedCluster created with spec.etcd.restoreFrom naming
// a complete EtcdBackup starts from its snapshot.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=etcdbackups,scope=Namespaced
// +kubebuilder:printcolumn:name="Cluster",type="string",JSONPath=".spec.clusterName",description="The HostedCluster whose etcd is backed up"
// +kubebuilder:printcolumn:name="Complete",type="string",JSONPath=".status.conditions[?(@.type==\"Complete\")].status",description="Whether the snapshot is written and checked"
// +kubebuilder:printcolumn:name="Revision",type="integer",JSONPath=".status.snapshot.revision",description="The etcd revision the snapshot holds"
// +kubebuilder:printcolumn:name="Size",type="integer",JSONPath=".status.snapshot.sizeBytes",description="The snapshot's size in bytes"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Message",type="string",JSONPath=".status.conditions[?(@.type==\"Complete\")].message",description="Why the backup is or is not complete"
// +kubebuilder:printcolumn:name="SHA256",type="string",priority=1,JSONPath=".status.snapshot.sha256",description="The snapshot file's SHA-256"
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 50 && !format.dns1123Label().validate(self.metadata.name).hasValue()",message="metadata.name must be a lowercase RFC 1123 label of at most 50 characters (letters, digits and '-', starting and ending with a letter or digit): it names the snapshot's file and the backup's Jobs"
type EtcdBackup struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec EtcdBackupSpec `json:"spec"`
	// +optional
	Status EtcdBackupStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// EtcdBackupList is a list of EtcdBackups.
type EtcdBackupList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EtcdBackup `json:"items"`
}

// EtcdBackupCompleteCondition is the EtcdBackup's condition: True once the
// snapshot is written and its SHA-256 checked on the claim's volume.
const EtcdBackupCompleteCondition = "Complete"

// Reasons of the EtcdBackup's Complete condition.
const (
	// EtcdBackupWaitingReason: False, the HostedCluster, its etcd or the
	// claim is not there yet; the backup starts once they are.
	EtcdBackupWaitingReason = "Waiting"
	// EtcdBackupInProgressReason: False, the snapshot is being taken or
	// written.
	EtcdBackupInProgressReason = "InProgress"
	// EtcdBackupFailedReason: False for good: the message says what
	// failed. Create another EtcdBackup to try again.
	EtcdBackupFailedReason = "BackupFailed"
	// EtcdBackupSucceededReason: True.
	EtcdBackupSucceededReason = "SnapshotWritten"
)

// EtcdBackupEncryptionConfigName names the Secret beside an EtcdBackup
// that keeps the hosted kube-apiserver's EncryptionConfiguration of the
// snapshot.
func EtcdBackupEncryptionConfigName(backup string) string {
	return backup + "-encryption-config"
}

// EtcdBackupFileName is the file an EtcdBackup's snapshot is written to at
// the root of its claim's volume.
func EtcdBackupFileName(backup string) string {
	return backup + ".db"
}
