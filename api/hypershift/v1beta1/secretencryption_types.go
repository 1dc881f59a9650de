package v1beta1

// SecretEncryptionType is how the hosted kube-apiserver encrypts Secrets
// in its etcd.
//
// +kubebuilder:validation:Enum=aescbc
type SecretEncryptionType string

const (
	// AESCBC encrypts with AES-CBC under keys the user keeps in Secrets
	// (the kube-apiserver's aescbc provider).
	AESCBC SecretEncryptionType = "aescbc"
)

// AESCBCKeySecretKey is the key of an encryption key Secret's data that
// holds the key: 32 random bytes (16 and 24 are accepted too), e.g.
// `head -c 32 /dev/urandom > key && kubectl create secret generic
// my-key --from-file=key`.
const AESCBCKeySecretKey = "key"

// SecretEncryptionSpec says how the hosted cluster's Secrets are encrypted
// at rest in its etcd. When it is unset, they are encrypted all the same
// (aescbc), with a key the control-plane-operator generates and keeps in
// the control-plane namespace (Secret kube-apiserver-encryption-key).
// KMS is not supported.
//
// +kubebuilder:validation:XValidation:rule="self.type != 'aescbc' || has(self.aescbc)",message="aescbc is required when type is aescbc"
type SecretEncryptionSpec struct {
	// type is the encryption provider: aescbc.
	//
	// +required
	Type SecretEncryptionType `json:"type"`

	// aescbc names the keys of the aescbc provider.
	//
	// +optional
	AESCBC *AESCBCSpec `json:"aescbc,omitempty"`
}

// AESCBCSpec names the Secrets, in the cluster's namespace, that hold the
// aescbc keys under AESCBCKeySecretKey ("key"). To rotate: create a new
// key Secret, make it activeKey and the old one backupKey; every Secret
// is then rewritten with the new key (the cluster's SecretsEncrypted
// condition says when); then drop backupKey.
//
// +kubebuilder:validation:XValidation:rule="!has(self.backupKey) || self.backupKey.name != self.activeKey.name",message="backupKey must name another Secret than activeKey"
type AESCBCSpec struct {
	// activeKey encrypts every Secret written.
	//
	// +required
	ActiveKey LocalObjectReference `json:"activeKey"`

	// backupKey still decrypts Secrets written before the active key
	// changed, until they are all rewritten.
	//
	// +optional
	BackupKey *LocalObjectReference `json:"backupKey,omitempty"`
}

// SecretEncryptionStatus says which key the hosted cluster's Secrets are
// encrypted with.
type SecretEncryptionStatus struct {
	// activeKey names, as the kube-apiserver's encryption configuration
	// does (key-<digest of the key>), the key Secrets are written with.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=64
	ActiveKey string `json:"activeKey,omitempty"`

	// rewrittenWith is the active key every Secret of the hosted cluster
	// was last rewritten with: when it equals activeKey, no Secret needs
	// another key to be read.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=64
	RewrittenWith string `json:"rewrittenWith,omitempty"`
}
