package pki

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiserverv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
	"sigs.k8s.io/yaml"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
)

func keySecret(name string, key []byte) *corev1.Secret {
	s := &corev1.Secret{Data: map[string][]byte{hyperv1.AESCBCKeySecretKey: key}}
	s.Name = name
	return s
}

// configKeys decodes an encryption configuration into its aescbc key
// names, and checks that identity comes last.
func configKeys(t *testing.T, raw []byte) []string {
	t.Helper()
	config := &apiserverv1.EncryptionConfiguration{}
	if err := yaml.UnmarshalStrict(raw, config); err != nil {
		t.Fatalf("the encryption configuration does not decode: %v\n%s", err, raw)
	}
	if config.Kind != "EncryptionConfiguration" || len(config.Resources) != 1 || !slices.Equal(config.Resources[0].Resources, []string{"secrets"}) {
		t.Fatalf("unexpected configuration:\n%s", raw)
	}
	providers := config.Resources[0].Providers
	if len(providers) != 2 || providers[0].AESCBC == nil || providers[1].Identity == nil {
		t.Fatalf("want aescbc then identity, got:\n%s", raw)
	}
	var names []string
	for _, k := range providers[0].AESCBC.Keys {
		names = append(names, k.Name)
	}
	return names
}

// TestPlanGeneratesAnEncryptionKey: without keys of the user's, a 32-byte
// key is generated once, kept byte for byte, and is the active key.
func TestPlanGeneratesAnEncryptionKey(t *testing.T) {
	first := mustPlan(t, testInputs(), nil, t0)
	live := byName(first)
	key := live[EncryptionKeySecret].Data[hyperv1.AESCBCKeySecretKey]
	if len(key) != 32 {
		t.Fatalf("generated key of %d bytes, want 32", len(key))
	}
	if got := configKeys(t, live[EncryptionConfigSecret].Data[EncryptionConfigKey]); !slices.Equal(got, []string{EncryptionKeyName(key)}) {
		t.Errorf("configuration keys %v, want the generated one", got)
	}
	if first.EncryptionActiveKey != EncryptionKeyName(key) {
		t.Errorf("active key %q, want %q", first.EncryptionActiveKey, EncryptionKeyName(key))
	}
	again := mustPlan(t, testInputs(), live, t0)
	if len(again.Writes) > 0 {
		t.Errorf("a second plan writes %v", writtenNames(again))
	}
	if !bytes.Equal(byName(again)[EncryptionKeySecret].Data[hyperv1.AESCBCKeySecretKey], key) {
		t.Error("the generated key changed")
	}
}

// TestPlanRotatesToTheUsersKeys: the user's keys come first, active then
// backup; the generated key stays a decryption key while its Secret
// exists, and is not made again once it is deleted.
func TestPlanRotatesToTheUsersKeys(t *testing.T) {
	live := byName(mustPlan(t, testInputs(), nil, t0))
	generated := live[EncryptionKeySecret].Data[hyperv1.AESCBCKeySecretKey]
	k1, k2 := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 16)
	live["key-one"], live["key-two"] = keySecret("key-one", k1), keySecret("key-two", k2)

	in := testInputs()
	in.EncryptionKeys = []string{"key-one"}
	result := mustPlan(t, in, live, t0)
	if !slices.Equal(writtenNames(result), []string{EncryptionConfigSecret}) || result.Writes[0].Cause != Changed {
		t.Errorf("writes %+v, want only the configuration, changed", result.Writes)
	}
	live = byName(result)
	live["key-one"], live["key-two"] = keySecret("key-one", k1), keySecret("key-two", k2)
	if got, want := configKeys(t, live[EncryptionConfigSecret].Data[EncryptionConfigKey]), []string{EncryptionKeyName(k1), EncryptionKeyName(generated)}; !slices.Equal(got, want) {
		t.Errorf("configuration keys %v, want %v", got, want)
	}

	in.EncryptionKeys = []string{"key-two", "key-one"}
	delete(live, EncryptionKeySecret)
	result = mustPlan(t, in, live, t0)
	if got, want := configKeys(t, byName(result)[EncryptionConfigSecret].Data[EncryptionConfigKey]), []string{EncryptionKeyName(k2), EncryptionKeyName(k1)}; !slices.Equal(got, want) {
		t.Errorf("configuration keys %v, want %v", got, want)
	}
	if result.EncryptionActiveKey != EncryptionKeyName(k2) {
		t.Errorf("active key %q, want key-two's", result.EncryptionActiveKey)
	}
	if byName(result)[EncryptionKeySecret] != nil {
		t.Error("a deleted generated key was made again while the user names keys")
	}
	for _, s := range result.Secrets {
		if strings.HasPrefix(s.Name, "key-") {
			t.Errorf("Plan writes the user's key Secret %s", s.Name)
		}
	}
	if names := SecretNames(in); !slices.Contains(names, "key-one") || !slices.Contains(names, "key-two") {
		t.Errorf("SecretNames %v does not read the user's keys", names)
	}
}

// TestPlanRefusesUnusableEncryptionKeys: a generated key that does not
// hold a key is never replaced; a user's key of the wrong size, or
// missing, is reported with its name.
func TestPlanRefusesUnusableEncryptionKeys(t *testing.T) {
	live := byName(mustPlan(t, testInputs(), nil, t0))
	damaged := byName(mustPlan(t, testInputs(), nil, t0))
	damaged[EncryptionKeySecret].Data[hyperv1.AESCBCKeySecretKey] = []byte("short")
	_, err := Plan(testInputs(), damaged, t0)
	var keyErr *KeyError
	if !errors.As(err, &keyErr) || keyErr.Secret != EncryptionKeySecret || !strings.Contains(err.Error(), "never replaced") {
		t.Errorf("a damaged generated key: %v", err)
	}

	in := testInputs()
	in.EncryptionKeys = []string{"key-one"}
	live["key-one"] = keySecret("key-one", []byte("0123456789"))
	_, err = Plan(in, live, t0)
	if !errors.As(err, &keyErr) || keyErr.Secret != "key-one" || !strings.Contains(err.Error(), "10 bytes long, not 16, 24 or 32") {
		t.Errorf("a key of 10 bytes: %v", err)
	}
	delete(live, "key-one")
	if _, err = Plan(in, live, t0); err == nil || !strings.Contains(err.Error(), "encryption key Secret key-one not found") {
		t.Errorf("a missing key: %v", err)
	}
}

// TestPlanKeepsTheKeyTheSecretsAreStoredWith: keys that leave out the one
// every Secret was last rewritten with are refused, whatever else they
// name; with it as backup they are taken.
func TestPlanKeepsTheKeyTheSecretsAreStoredWith(t *testing.T) {
	k1, k2 := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	live := map[string]*corev1.Secret{"key-one": keySecret("key-one", k1), "key-two": keySecret("key-two", k2)}
	in := testInputs()
	in.StoredWith = EncryptionKeyName(k1)
	in.EncryptionKeys = []string{"key-two"}
	_, err := Plan(in, live, t0)
	var keyErr *KeyError
	if !errors.As(err, &keyErr) || !strings.Contains(err.Error(), "stored with key "+EncryptionKeyName(k1)+", which spec.secretEncryption no longer names") {
		t.Errorf("dropping the key the Secrets are stored with: %v", err)
	}
	in.EncryptionKeys = []string{"key-two", "key-one"}
	result := mustPlan(t, in, live, t0)
	if result.EncryptionActiveKey != EncryptionKeyName(k2) {
		t.Errorf("active key %s, want key-two's", result.EncryptionActiveKey)
	}
}

// TestPlanReadsRestoredSecretsWithTheBackupsKeys: a cluster restored from
// a backup keeps the backup's aescbc keys as decryption keys after its own
// active key (the restored Secrets are stored with them); without the
// backup's configuration, or with one that names no key, nothing is
// planned.
func TestPlanReadsRestoredSecretsWithTheBackupsKeys(t *testing.T) {
	old := bytes.Repeat([]byte{7}, 32)
	backupConfig, err := EncryptionConfiguration([][]byte{old})
	if err != nil {
		t.Fatal(err)
	}
	in := testInputs()
	in.RestoredKeys = hyperv1.EtcdRestoreEncryptionConfigSecret
	if _, err := Plan(in, nil, t0); err == nil || !strings.Contains(err.Error(), "the encryption configuration of the backup this cluster was restored from, not found") {
		t.Fatalf("Plan without the backup's keys: %v", err)
	}
	restored := &corev1.Secret{Data: map[string][]byte{EncryptionConfigKey: backupConfig}}
	restored.Name = hyperv1.EtcdRestoreEncryptionConfigSecret
	first := mustPlan(t, in, map[string]*corev1.Secret{restored.Name: restored}, t0)
	live := byName(first)
	generated := live[EncryptionKeySecret].Data[hyperv1.AESCBCKeySecretKey]
	if got := configKeys(t, live[EncryptionConfigSecret].Data[EncryptionConfigKey]); !slices.Equal(got, []string{EncryptionKeyName(generated), EncryptionKeyName(old)}) {
		t.Errorf("configuration keys %v, want the cluster's own active, then the backup's", got)
	}
	if first.EncryptionActiveKey != EncryptionKeyName(generated) {
		t.Errorf("active key %s, want the cluster's own", first.EncryptionActiveKey)
	}
	if _, ok := live[restored.Name]; ok {
		t.Error("the plan writes the backup's configuration, which is the hypershift-operator's")
	}
	restored.Data[EncryptionConfigKey] = []byte("apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\n")
	var keyErr *KeyError
	if _, err := Plan(in, map[string]*corev1.Secret{restored.Name: restored}, t0); !errors.As(err, &keyErr) || keyErr.Secret != restored.Name {
		t.Fatalf("Plan with a backup configuration without keys: %v", err)
	}
}
