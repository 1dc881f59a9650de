package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"time"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// CA is a parsed certificate authority.
type CA struct {
	// Cert is the CA's certificate.
	Cert *x509.Certificate
	// Key signs the certificates the CA issues.
	Key crypto.Signer
	// CertPEM is the certificate as stored.
	CertPEM []byte
}

// keyPair is a PEM certificate and its PEM private key.
type keyPair struct {
	certPEM, keyPEM []byte
}

// newKey returns a new ECDSA P-256 private key: fast to generate, and
// accepted by etcd and every Kubernetes component, for TLS and for
// service-account tokens (ES256).
func newKey() (*ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("failed to generate a private key: %w", err)
	}
	return key, nil
}

// issueCA makes a self-signed CA valid from now (backdated) for
// CAValidity.
func issueCA(commonName string, now time.Time) (keyPair, error) {
	key, err := newKey()
	if err != nil {
		return keyPair{}, err
	}
	template := &x509.Certificate{
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(CAValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	return sign(template, template, key, key)
}

// issueLeaf makes a certificate for spec, signed by ca, valid from now
// (backdated) for LeafValidity but never beyond the CA.
func issueLeaf(spec certSpec, ca *CA, now time.Time) (keyPair, error) {
	key, err := newKey()
	if err != nil {
		return keyPair{}, err
	}
	notAfter := now.Add(LeafValidity)
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	template := &x509.Certificate{
		Subject:     pkix.Name{CommonName: spec.CommonName, Organization: spec.Organization},
		DNSNames:    spec.DNSNames,
		IPAddresses: spec.IPAddresses,
		NotBefore:   now.Add(-backdate),
		NotAfter:    notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: spec.Usages,
	}
	return sign(template, ca.Cert, key, ca.Key)
}

// sign signs template with parentKey and encodes the certificate and key.
func sign(template, parent *x509.Certificate, key *ecdsa.PrivateKey, parentKey crypto.Signer) (keyPair, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return keyPair{}, fmt.Errorf("failed to generate a serial number: %w", err)
	}
	template.SerialNumber = serial
	der, err := x509.CreateCertificate(rand.Reader, template, parent, key.Public(), parentKey)
	if err != nil {
		return keyPair{}, fmt.Errorf("failed to sign certificate %q: %w", template.Subject.CommonName, err)
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return keyPair{}, fmt.Errorf("failed to encode private key: %w", err)
	}
	return keyPair{certPEM: pem.EncodeToMemory(&pem.Block{Type: certutil.CertificateBlockType, Bytes: der}), keyPEM: keyPEM}, nil
}

// newServiceAccountKeys returns a PEM private key and its PEM public key.
func newServiceAccountKeys() (private, public []byte, err error) {
	key, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	private, err = keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to encode private key: %w", err)
	}
	public, err = encodePublicKey(key.Public())
	return private, public, err
}

func encodePublicKey(key crypto.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(key)
	if err != nil {
		return nil, fmt.Errorf("failed to encode public key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: keyutil.PublicKeyBlockType, Bytes: der}), nil
}

// certSpec is what a leaf certificate must say.
type certSpec struct {
	CommonName   string
	Organization []string
	DNSNames     []string
	IPAddresses  []net.IP
	Usages       []x509.ExtKeyUsage
}
