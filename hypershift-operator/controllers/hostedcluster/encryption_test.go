package hostedcluster_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/testutil"
)

// TestSecretEncryptionKeys: a HostedCluster whose key Secret is missing, or
// holds no AES key, waits with a message that says how to make one; its
// keys are copied into the control-plane namespace and named there by the
// HostedControlPlane; a rotation copies the new key beside the old one,
// and the copy of a key no longer named is deleted.
func TestSecretEncryptionKeys(t *testing.T) {
	startOperator(t, nil)
	k1, k2 := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	c := newCluster(t, "4.17.0", func(hc *hyperv1.HostedCluster) {
		hc.Spec.SecretEncryption = encryption("key-one", "")
	})
	awaitInvalid := func(message string) {
		t.Helper()
		testutil.Eventually(t, converge, func() error {
			cond := meta.FindStatusCondition(c.get(t).Status.Conditions, hyperv1.ValidConfiguration)
			if cond == nil || cond.Status != metav1.ConditionFalse || !strings.Contains(cond.Message, message) {
				return fmt.Errorf("ValidConfiguration = %+v", cond)
			}
			return nil
		})
	}
	awaitInvalid("Secret encryption key Secret " + c.hc.Namespace + "/key-one not found: create it with a random key under \"key\", e.g. head -c 32 /dev/urandom")

	createKey(t, c.hc.Namespace, "key-one", []byte("too short"))
	awaitInvalid("holds no usable key: its \"key\" is 9 bytes long, not 16, 24 or 32")

	setKey(t, c.hc.Namespace, "key-one", k1)
	c.awaitKeyCopies(t, map[string][]byte{"key-one": k1}, "key-one", "")

	createKey(t, c.hc.Namespace, "key-two", k2)
	c.update(t, func(hc *hyperv1.HostedCluster) { hc.Spec.SecretEncryption = encryption("key-two", "key-one") })
	c.awaitKeyCopies(t, map[string][]byte{"key-one": k1, "key-two": k2}, "key-two", "key-one")

	c.update(t, func(hc *hyperv1.HostedCluster) { hc.Spec.SecretEncryption = encryption("key-two", "") })
	c.awaitKeyCopies(t, map[string][]byte{"key-two": k2}, "key-two", "")
}

func encryption(active, backup string) *hyperv1.SecretEncryptionSpec {
	spec := &hyperv1.SecretEncryptionSpec{Type: hyperv1.AESCBC, AESCBC: &hyperv1.AESCBCSpec{ActiveKey: hyperv1.LocalObjectReference{Name: active}}}
	if backup != "" {
		spec.AESCBC.BackupKey = &hyperv1.LocalObjectReference{Name: backup}
	}
	return spec
}

func createKey(t *testing.T, ns, name string, key []byte) {
	t.Helper()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{hyperv1.AESCBCKeySecretKey: key}}
	if err := env.Client.Create(t.Context(), secret); err != nil {
		t.Fatal(err)
	}
}

func setKey(t *testing.T, ns, name string, key []byte) {
	t.Helper()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{hyperv1.AESCBCKeySecretKey: key}}
	if err := env.Client.Update(t.Context(), secret); err != nil {
		t.Fatal(err)
	}
}

// awaitKeyCopies waits until the control-plane namespace holds exactly the
// copies of want, and the HostedControlPlane names active and backup.
func (c *cluster) awaitKeyCopies(t *testing.T, want map[string][]byte, active, backup string) {
	t.Helper()
	testutil.Eventually(t, converge, func() error {
		list := &corev1.SecretList{}
		if err := env.Client.List(t.Context(), list, client.InNamespace(c.controlPlaneNamespace()),
			client.MatchingLabels{hyperv1.SecretCopyLabel: hyperv1.SecretCopyEncryptionKey}); err != nil {
			return err
		}
		got := map[string][]byte{}
		for _, s := range list.Items {
			got[strings.TrimPrefix(s.Name, hyperv1.SecretEncryptionKeyCopyPrefix)] = s.Data[hyperv1.AESCBCKeySecretKey]
		}
		if len(got) != len(want) {
			return fmt.Errorf("copies of %d keys, want %d", len(got), len(want))
		}
		for name, key := range want {
			if !bytes.Equal(got[name], key) {
				return fmt.Errorf("the copy of %s holds %v", name, got[name])
			}
		}
		hcp := &hyperv1.HostedControlPlane{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: c.controlPlaneNamespace(), Name: c.hc.Name}, hcp); err != nil {
			if apierrors.IsNotFound(err) {
				return err
			}
			t.Fatal(err)
		}
		names := hyperv1.EncryptionKeySecrets(hcp.Spec.SecretEncryption)
		wantNames := []string{hyperv1.SecretEncryptionKeyCopyName(active)}
		if backup != "" {
			wantNames = append(wantNames, hyperv1.SecretEncryptionKeyCopyName(backup))
		}
		if fmt.Sprint(names) != fmt.Sprint(wantNames) {
			return fmt.Errorf("the HostedControlPlane names keys %v, want %v", names, wantNames)
		}
		return nil
	})
}
