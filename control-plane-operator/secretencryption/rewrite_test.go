package secretencryption_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hypershift-le/hypershift/control-plane-operator/pki"
	"github.com/hypershift-le/hypershift/control-plane-operator/secretencryption"
	"github.com/hypershift-le/hypershift/test/testenv"
)

// marker is in every Secret the test writes: it must never be found in
// etcd once the Secrets are encrypted.
const marker = "encryption-marker-7d41c2"

// TestEncryptionAtRestAndKeyRotation runs the real kube-apiserver, over one
// etcd, with the encryption configurations the PKI renders, one after the
// other as the control-plane-operator rolls them out, and reads what it
// stored in etcd: a Secret written before encryption was on is plain text
// until Rewrite; then every Secret is stored under the generated key;
// after a rotation (new active key, the old one as backup) and Rewrite,
// under the new key only (named by its digest), so that the old key can
// be dropped and every Secret still reads.
func TestEncryptionAtRestAndKeyRotation(t *testing.T) {
	state := t.TempDir()
	k1, k2 := bytes.Repeat([]byte{0x11}, 32), bytes.Repeat([]byte{0x22}, 32)
	ns := "encryption"

	env := start(t, state)
	createNamespace(t, env, ns)
	createSecret(t, env, ns, "before")
	stop(t, env)

	// Encryption on, with the generated key.
	env = start(t, state, k1)
	if raw := rawSecret(t, env, ns, "before"); !bytes.Contains(raw, []byte(marker)) {
		t.Fatalf("a Secret written before encryption was on is not plain text: %q", raw)
	}
	createSecret(t, env, ns, "after")
	checkStoredWith(t, env, ns, "after", k1)
	result, err := secretencryption.Rewrite(t.Context(), env.Client)
	if err != nil {
		t.Fatal(err)
	}
	if result.Rewritten < 1 || result.Listed < 2 {
		t.Errorf("Rewrite %+v: want the plain-text Secret rewritten", result)
	}
	checkStoredWith(t, env, ns, "before", k1)
	checkNoPlainText(t, env)
	if again, err := secretencryption.Rewrite(t.Context(), env.Client); err != nil || again.Rewritten != 0 {
		t.Errorf("a second Rewrite %+v (%v): want no write, every Secret holds the active key", again, err)
	}
	stop(t, env)

	// Rotation: the new key active, the old one as backup.
	env = start(t, state, k2, k1)
	checkStoredWith(t, env, ns, "before", k1)
	readSecret(t, env, ns, "before")
	if result, err = secretencryption.Rewrite(t.Context(), env.Client); err != nil || result.Rewritten < 2 {
		t.Fatalf("Rewrite after the rotation %+v (%v): want both Secrets rewritten", result, err)
	}
	checkStoredWith(t, env, ns, "before", k2)
	checkStoredWith(t, env, ns, "after", k2)
	checkNoPlainText(t, env)
	stop(t, env)

	// The old key dropped: everything still reads.
	env = start(t, state, k2)
	readSecret(t, env, ns, "before")
	readSecret(t, env, ns, "after")
	stop(t, env)
}

// start runs the API server over the etcd data in state, encrypting with
// keys (the first active) when there are any.
func start(t *testing.T, state string, keys ...[]byte) *testenv.Env {
	t.Helper()
	flags := map[string]string{}
	if len(keys) > 0 {
		config, err := pki.EncryptionConfiguration(keys)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), pki.EncryptionConfigKey)
		if err := os.WriteFile(path, config, 0o600); err != nil {
			t.Fatal(err)
		}
		flags["encryption-provider-config"] = path
	}
	env, err := testenv.Start(t.Context(), testenv.Options{StateDir: state, SkipAdmissionPolicies: true, APIServerFlags: flags})
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func stop(t *testing.T, env *testenv.Env) {
	t.Helper()
	if err := env.Stop(); err != nil {
		t.Fatal(err)
	}
}

func createNamespace(t *testing.T, env *testenv.Env, name string) {
	t.Helper()
	if err := env.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
}

func createSecret(t *testing.T, env *testenv.Env, namespace, name string) {
	t.Helper()
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		StringData: map[string]string{"password": marker + "-" + name},
	}
	if err := env.Client.Create(t.Context(), secret); err != nil {
		t.Fatal(err)
	}
}

func readSecret(t *testing.T, env *testenv.Env, namespace, name string) {
	t.Helper()
	secret := &corev1.Secret{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: namespace, Name: name}, secret); err != nil {
		t.Fatalf("Secret %s/%s does not read: %v", namespace, name, err)
	}
	if got := string(secret.Data["password"]); got != marker+"-"+name {
		t.Errorf("Secret %s/%s reads %q", namespace, name, got)
	}
}

// checkStoredWith checks that etcd holds the Secret encrypted with key.
func checkStoredWith(t *testing.T, env *testenv.Env, namespace, name string, key []byte) {
	t.Helper()
	raw := rawSecret(t, env, namespace, name)
	prefix := "k8s:enc:aescbc:v1:" + pki.EncryptionKeyName(key) + ":"
	if !bytes.HasPrefix(raw, []byte(prefix)) || bytes.Contains(raw, []byte(marker)) {
		t.Errorf("etcd holds Secret %s/%s as %.60q..., want it encrypted under %s", namespace, name, raw, prefix)
	}
}

// checkNoPlainText checks that no Secret in etcd holds the marker.
func checkNoPlainText(t *testing.T, env *testenv.Env) {
	t.Helper()
	for key, value := range etcdRange(t, env, "/registry/secrets/", "/registry/secrets0") {
		if bytes.Contains(value, []byte(marker)) {
			t.Errorf("etcd holds %s in plain text", key)
		}
		if !bytes.HasPrefix(value, []byte("k8s:enc:aescbc:v1:")) {
			t.Errorf("etcd holds %s unencrypted", key)
		}
	}
}

func rawSecret(t *testing.T, env *testenv.Env, namespace, name string) []byte {
	t.Helper()
	key := "/registry/secrets/" + namespace + "/" + name
	kvs := etcdRange(t, env, key, "")
	value, ok := kvs[key]
	if !ok {
		t.Fatalf("etcd holds no %s", key)
	}
	return value
}

// etcdRange reads keys [key, end) (key alone when end is empty) from etcd,
// through its JSON gateway.
func etcdRange(t *testing.T, env *testenv.Env, key, end string) map[string][]byte {
	t.Helper()
	request := map[string]string{"key": base64.StdEncoding.EncodeToString([]byte(key))}
	if end != "" {
		request["range_end"] = base64.StdEncoding.EncodeToString([]byte(end))
	}
	body, err := json.Marshal(request)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(strings.TrimSuffix(env.EtcdURL(), "/")+"/v3/kv/range", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var out struct {
		KVs []struct {
			Key   []byte `json:"key"`
			Value []byte `json:"value"`
		} `json:"kvs"`
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("etcd answered %s", resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(fmt.Errorf("failed to decode etcd's answer: %w", err))
	}
	kvs := map[string][]byte{}
	for _, kv := range out.KVs {
		kvs[string(kv.Key)] = kv.Value
	}
	return kvs
}
