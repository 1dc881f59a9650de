package pki

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiserverv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
	"sigs.k8s.io/yaml"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
)

// Encryption at rest of the hosted cluster's Secrets.
const (
	// EncryptionKeySecret holds the aescbc key the control-plane-operator
	// generates (under hyperv1.AESCBCKeySecretKey) when the user names
	// none. It is never replaced, and stays a decryption key after the
	// user names keys of their own, until it is deleted.
	EncryptionKeySecret = "kube-apiserver-encryption-key"
	// EncryptionConfigSecret holds the kube-apiserver's
	// EncryptionConfiguration, under EncryptionConfigKey.
	EncryptionConfigSecret = "kube-apiserver-encryption-config"
	// EncryptionConfigKey is the configuration's key in
	// EncryptionConfigSecret.
	EncryptionConfigKey = "config.yaml"

	// encryptionKeySize is the size of a generated key: AES-256.
	encryptionKeySize = 32
)

// reasonEncryptionKeys says the encryption configuration was rewritten.
const reasonEncryptionKeys = "the encryption keys changed"

// KeyError says that an encryption key Secret exists but holds no usable
// key. A generated key is never replaced (what it encrypted could not be
// read any more); a user's key is the user's to fix.
type KeyError struct {
	// Secret names the key Secret; empty when the set of keys is refused.
	Secret string
	// Err says what is wrong with it.
	Err error
}

func (e *KeyError) Error() string {
	switch e.Secret {
	case "":
		return "refusing the new encryption keys: " + e.Err.Error()
	case EncryptionKeySecret:
		return fmt.Sprintf("Secret %s holds no usable encryption key (%v); it is never replaced, as the hosted cluster's Secrets encrypted with it could not be read any more: restore it", e.Secret, e.Err)
	}
	return fmt.Sprintf("encryption key Secret %s holds no usable key: %v", e.Secret, e.Err)
}

func (e *KeyError) Unwrap() error { return e.Err }

// EncryptionKeyName is how the encryption configuration names key: by a
// digest of it, so that a Secret whose key changes names another key, and
// data written with the old one is never read with the new one.
func EncryptionKeyName(key []byte) string {
	sum := sha256.Sum256(key)
	return "key-" + hex.EncodeToString(sum[:8])
}

// encryption plans the generated key and the encryption configuration: the
// user's keys first (the active one encrypts), then the generated key (it
// encrypts when the user names none), then identity, which reads what was
// written before encryption was on.
func (p *planner) encryption() error {
	var keys [][]byte
	for _, name := range p.in.EncryptionKeys {
		s := p.live[name]
		if s == nil {
			return fmt.Errorf("encryption key Secret %s not found", name)
		}
		key, err := hyperv1.CheckAESCBCKey(s.Data)
		if err != nil {
			return &KeyError{Secret: name, Err: err}
		}
		keys = append(keys, key)
	}
	switch generated := p.live[EncryptionKeySecret]; {
	case generated != nil:
		key, err := hyperv1.CheckAESCBCKey(generated.Data)
		if err != nil {
			return &KeyError{Secret: EncryptionKeySecret, Err: err}
		}
		p.add(EncryptionKeySecret, corev1.SecretTypeOpaque, map[string][]byte{hyperv1.AESCBCKeySecretKey: key}, nil)
		keys = append(keys, key)
	case len(keys) == 0:
		key := make([]byte, encryptionKeySize)
		if _, err := rand.Read(key); err != nil {
			return fmt.Errorf("failed to generate %s: %w", EncryptionKeySecret, err)
		}
		p.add(EncryptionKeySecret, corev1.SecretTypeOpaque, map[string][]byte{hyperv1.AESCBCKeySecretKey: key}, &Write{Reason: reasonMissing, Cause: Missing})
		keys = append(keys, key)
	}
	restored, err := p.restoredKeys()
	if err != nil {
		return err
	}
	keys = append(keys, restored...)
	if err := p.keepsStoredKey(keys); err != nil {
		return err
	}
	config, err := EncryptionConfiguration(keys)
	if err != nil {
		return err
	}
	var write *Write
	switch live := p.live[EncryptionConfigSecret]; {
	case live == nil:
		write = &Write{Reason: reasonMissing, Cause: Missing}
	case !bytes.Equal(live.Data[EncryptionConfigKey], config):
		write = &Write{Reason: reasonEncryptionKeys, Cause: Changed}
	}
	p.add(EncryptionConfigSecret, corev1.SecretTypeOpaque, map[string][]byte{EncryptionConfigKey: config}, write)
	p.result.EncryptionActiveKey = EncryptionKeyName(keys[0])
	return nil
}

// restoredKeys are the aescbc keys of the EncryptionConfiguration of the
// backup the cluster's etcd was restored from: the restored Secrets are
// stored with them until they are rewritten, so they stay decryption keys
// (never the active one) for as long as the Secret is there.
func (p *planner) restoredKeys() ([][]byte, error) {
	if p.in.RestoredKeys == "" {
		return nil, nil
	}
	s := p.live[p.in.RestoredKeys]
	if s == nil {
		return nil, fmt.Errorf("secret %s, the encryption configuration of the backup this cluster was restored from, not found", p.in.RestoredKeys)
	}
	config := &apiserverv1.EncryptionConfiguration{}
	if err := yaml.Unmarshal(s.Data[EncryptionConfigKey], config); err != nil {
		return nil, &KeyError{Secret: p.in.RestoredKeys, Err: fmt.Errorf("its %s is no EncryptionConfiguration: %w", EncryptionConfigKey, err)}
	}
	var keys [][]byte
	for _, r := range config.Resources {
		for _, provider := range r.Providers {
			if provider.AESCBC == nil {
				continue
			}
			for _, k := range provider.AESCBC.Keys {
				key, err := base64.StdEncoding.DecodeString(k.Secret)
				if err != nil {
					return nil, &KeyError{Secret: p.in.RestoredKeys, Err: fmt.Errorf("key %s is not base64: %w", k.Name, err)}
				}
				if _, err := hyperv1.CheckAESCBCKey(map[string][]byte{hyperv1.AESCBCKeySecretKey: key}); err != nil {
					return nil, &KeyError{Secret: p.in.RestoredKeys, Err: fmt.Errorf("key %s: %w", k.Name, err)}
				}
				keys = append(keys, key)
			}
		}
	}
	if len(keys) == 0 {
		return nil, &KeyError{Secret: p.in.RestoredKeys, Err: errors.New("it names no aescbc key")}
	}
	return keys, nil
}

// keepsStoredKey refuses keys without the one the hosted cluster's Secrets
// are stored with: the kube-apiserver could read none of them.
func (p *planner) keepsStoredKey(keys [][]byte) error {
	if p.in.StoredWith == "" {
		return nil
	}
	for _, key := range keys {
		if EncryptionKeyName(key) == p.in.StoredWith {
			return nil
		}
	}
	return &KeyError{Err: fmt.Errorf("the hosted cluster's Secrets are stored with key %s, which spec.secretEncryption no longer names: name its Secret as backupKey again, until SecretsEncrypted is True with the new active key", p.in.StoredWith)}
}

// EncryptionConfiguration is the kube-apiserver's encryption configuration
// of Secrets with keys, the first one active: aescbc, then identity.
func EncryptionConfiguration(keys [][]byte) ([]byte, error) {
	aescbc := &apiserverv1.AESConfiguration{}
	seen := map[string]bool{}
	for _, key := range keys {
		name := EncryptionKeyName(key)
		if seen[name] {
			continue
		}
		seen[name] = true
		aescbc.Keys = append(aescbc.Keys, apiserverv1.Key{Name: name, Secret: base64.StdEncoding.EncodeToString(key)})
	}
	config := &apiserverv1.EncryptionConfiguration{
		TypeMeta: metav1.TypeMeta{APIVersion: apiserverv1.SchemeGroupVersion.String(), Kind: "EncryptionConfiguration"},
		Resources: []apiserverv1.ResourceConfiguration{{
			Resources: []string{"secrets"},
			Providers: []apiserverv1.ProviderConfiguration{{AESCBC: aescbc}, {Identity: &apiserverv1.IdentityConfiguration{}}},
		}},
	}
	out, err := yaml.Marshal(config)
	if err != nil {
		return nil, fmt.Errorf("failed to encode the encryption configuration: %w", err)
	}
	return out, nil
}
