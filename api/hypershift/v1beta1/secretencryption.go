package v1beta1

import "fmt"

// SecretEncryptionKeyCopyPrefix starts the names of the copies, in the
// control-plane namespace, of the key Secrets a HostedCluster's
// spec.secretEncryption names: the copy of Secret my-key is
// secret-encryption-my-key, which no Secret of the control plane's own is
// named like.
const SecretEncryptionKeyCopyPrefix = "secret-encryption-"

// SecretEncryptionKeyCopyName names the copy of key Secret name.
func SecretEncryptionKeyCopyName(name string) string {
	return SecretEncryptionKeyCopyPrefix + name
}

// EncryptionKeySecrets names the key Secrets of spec, the active one
// first; none when spec is nil.
func EncryptionKeySecrets(spec *SecretEncryptionSpec) []string {
	if spec == nil || spec.AESCBC == nil {
		return nil
	}
	names := []string{spec.AESCBC.ActiveKey.Name}
	if spec.AESCBC.BackupKey != nil {
		names = append(names, spec.AESCBC.BackupKey.Name)
	}
	return names
}

// CheckAESCBCKey returns the AES key a key Secret's data holds, or says
// why it holds none.
func CheckAESCBCKey(data map[string][]byte) ([]byte, error) {
	key, ok := data[AESCBCKeySecretKey]
	if !ok {
		return nil, fmt.Errorf("it has no %q key", AESCBCKeySecretKey)
	}
	switch len(key) {
	case 16, 24, 32:
		return key, nil
	}
	return nil, fmt.Errorf("its %q is %d bytes long, not 16, 24 or 32 (head -c 32 /dev/urandom makes one)", AESCBCKeySecretKey, len(key))
}
