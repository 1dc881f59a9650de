package etcdbackup

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
)

// transferValidity bounds the transfer certificate's life: both Jobs end
// within their deadline.
const transferValidity = 24 * time.Hour

// newTransfer returns the data of a transfer's Secret: a self-signed
// certificate and its key, which the serving pod presents and the
// receiving pod pins (it connects to a pod address no certificate can name
// ahead of time), and a random bearer token that a download must present.
func newTransfer(now time.Time) (map[string][]byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("failed to generate the transfer key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("failed to generate the transfer certificate's serial: %w", err)
	}
	template := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "etcd-snapshot-transfer"},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(transferValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("failed to sign the transfer certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("failed to encode the transfer key: %w", err)
	}
	token := make([]byte, 32)
	if _, err := rand.Read(token); err != nil {
		return nil, fmt.Errorf("failed to generate the transfer token: %w", err)
	}
	return map[string][]byte{
		TransferCertKey:  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		TransferKeyKey:   pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		TransferTokenKey: []byte(hex.EncodeToString(token)),
	}, nil
}

// transferSecrets returns the transfer's two Secrets: the serving side's
// in the control-plane namespace, with the key, and the receiving side's
// beside the EtcdBackup (owned by it), without.
func transferSecrets(backup *hyperv1.EtcdBackup, controlPlane string, data map[string][]byte) (serve, receive *corev1.Secret) {
	labels := map[string]string{BackupLabel: backup.Name}
	serve = &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: TransferSecretName(backup.Name), Namespace: controlPlane, Labels: labels,
			Annotations: map[string]string{ownerAnnotation: backup.Namespace + "/" + backup.Name},
		},
		Type: corev1.SecretTypeOpaque,
		Data: data,
	}
	receive = &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: TransferSecretName(backup.Name), Namespace: backup.Namespace, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{ownerReference(backup)},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{TransferCertKey: data[TransferCertKey], TransferTokenKey: data[TransferTokenKey]},
	}
	return serve, receive
}
