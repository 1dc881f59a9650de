package hostedcontrolplane

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/control-plane-operator/component"
	"github.com/hypershift-le/hypershift/control-plane-operator/components/kubeapiserver"
	"github.com/hypershift-le/hypershift/control-plane-operator/pki"
	"github.com/hypershift-le/hypershift/support/testutil"
)

// TestSecretEncryption: a control plane encrypts its Secrets from the
// start with a key the operator generates, and rewrites them once the
// kube-apiserver runs it; a key of the user's (the hypershift-operator's
// copy) becomes the active key, the generated one kept as a decryption
// key, and the Secrets are rewritten only once every replica runs the
// new configuration; a key of the wrong size stops the PKI with its name.
func TestSecretEncryption(t *testing.T) {
	cp := start(t, options{})
	cp.awaitPKI(t)
	cp.rollOutAll(t)
	cp.awaitAvailable(t)

	generated := cp.secret(t, pki.EncryptionKeySecret).Data[hyperv1.AESCBCKeySecretKey]
	if len(generated) != 32 {
		t.Fatalf("generated key of %d bytes", len(generated))
	}
	kas := &appsv1.Deployment{}
	if err := env.Client.Get(t.Context(), client2key(cp, kubeapiserver.Name), kas); err != nil {
		t.Fatal(err)
	}
	args := kas.Spec.Template.Spec.Containers[0].Args
	if !slices.Contains(args, "--encryption-provider-config=/etc/kubernetes/secrets/encryption/config.yaml") {
		t.Errorf("the kube-apiserver runs without the encryption configuration: %v", args)
	}
	cp.awaitEncryption(t, pki.EncryptionKeyName(generated), metav1.ConditionTrue, "Secret "+pki.EncryptionKeySecret+", generated")

	// The user's key: the hypershift-operator copies it, then names it.
	userKey := bytes.Repeat([]byte{7}, 32)
	cp.createKeyCopy(t, "secret-encryption-mine", userKey)
	before := kas.Spec.Template.Annotations[component.SecretsHashAnnotation]
	cp.setEncryptionKey(t, "secret-encryption-mine")
	var config []byte
	testutil.Eventually(t, 30*time.Second, func() error {
		config = cp.secret(t, pki.EncryptionConfigSecret).Data[pki.EncryptionConfigKey]
		if !strings.Contains(string(config), pki.EncryptionKeyName(userKey)) {
			return fmt.Errorf("the configuration does not hold the user's key yet:\n%s", config)
		}
		return nil
	})
	if i, j := strings.Index(string(config), pki.EncryptionKeyName(userKey)), strings.Index(string(config), pki.EncryptionKeyName(generated)); i < 0 || j < i {
		t.Errorf("want the user's key active and the generated one after it:\n%s", config)
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		if err := env.Client.Get(t.Context(), client2key(cp, kubeapiserver.Name), kas); err != nil {
			return err
		}
		if kas.Spec.Template.Annotations[component.SecretsHashAnnotation] == before {
			return fmt.Errorf("the kube-apiserver's pod template did not change")
		}
		return nil
	})
	// Not rolled out yet: the Secrets wait.
	cp.awaitEncryption(t, pki.EncryptionKeyName(userKey), metav1.ConditionFalse, "Secret secret-encryption-mine")
	if st := cp.get(t).Status.SecretEncryption; st.RewrittenWith != pki.EncryptionKeyName(generated) {
		t.Errorf("rewrittenWith %q before the rollout, want the generated key's", st.RewrittenWith)
	}
	cp.rollOut(t, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: kubeapiserver.Name}})
	cp.awaitEncryption(t, pki.EncryptionKeyName(userKey), metav1.ConditionTrue, "Secret secret-encryption-mine")
	cp.awaitEvent(t, corev1.EventTypeNormal, "Rewrote ")

	// A damaged key of the user's.
	cp.createKeyCopy(t, "secret-encryption-short", []byte("0123456789"))
	cp.setEncryptionKey(t, "secret-encryption-short")
	testutil.Eventually(t, 30*time.Second, func() error {
		c := meta.FindStatusCondition(cp.get(t).Status.Conditions, hyperv1.ValidPKI)
		if c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "secret-encryption-short holds no usable key") {
			return fmt.Errorf("ValidPKI %+v", c)
		}
		return nil
	})
}

func (cp *controlPlane) createKeyCopy(t *testing.T, name string, key []byte) {
	t.Helper()
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: cp.namespace, Name: name, Labels: map[string]string{
			hyperv1.SecretCopyLabel: hyperv1.SecretCopyEncryptionKey, hyperv1.ControlPlaneComponentLabel: "secret-encryption",
		}},
		Data: map[string][]byte{hyperv1.AESCBCKeySecretKey: key},
	}
	if err := env.Client.Create(t.Context(), secret); err != nil {
		t.Fatal(err)
	}
}

func (cp *controlPlane) setEncryptionKey(t *testing.T, name string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		hcp := cp.get(t)
		hcp.Spec.SecretEncryption = &hyperv1.SecretEncryptionSpec{Type: hyperv1.AESCBC, AESCBC: &hyperv1.AESCBCSpec{
			ActiveKey: hyperv1.LocalObjectReference{Name: name},
		}}
		return env.Client.Update(t.Context(), hcp)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// awaitEncryption waits for status.secretEncryption.activeKey to be
// active and SecretsEncrypted to have status, naming secret; True means
// rewrittenWith is active too.
func (cp *controlPlane) awaitEncryption(t *testing.T, active string, status metav1.ConditionStatus, secret string) {
	t.Helper()
	testutil.Eventually(t, 30*time.Second, func() error {
		hcp := cp.get(t)
		st := hcp.Status.SecretEncryption
		c := meta.FindStatusCondition(hcp.Status.Conditions, hyperv1.SecretsEncrypted)
		switch {
		case st == nil || st.ActiveKey != active:
			return fmt.Errorf("status.secretEncryption %+v, want active key %s", st, active)
		case c == nil || c.Status != status || !strings.Contains(c.Message, secret):
			return fmt.Errorf("SecretsEncrypted %+v, want %s naming %s", c, status, secret)
		case status == metav1.ConditionTrue && st.RewrittenWith != active:
			return fmt.Errorf("rewrittenWith %q, want %q", st.RewrittenWith, active)
		}
		return nil
	})
}
