package testenv

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"

	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// certLifetime is how long the certificates of a CA stay valid: long enough
// for a local cluster whose state is kept between runs.
const certLifetime = 10 * 365 * 24 * time.Hour

// CA is a certificate authority for tests and the local cluster: it issues
// serving and client certificates with ECDSA P-256 keys.
type CA struct {
	cert *x509.Certificate
	key  crypto.Signer
}

// NewCA creates a self-signed CA named commonName.
func NewCA(commonName string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("failed to generate a CA key: %w", err)
	}
	caCert, err := cert.NewSelfSignedCACert(cert.Config{CommonName: commonName}, key)
	if err != nil {
		return nil, fmt.Errorf("failed to create the CA certificate: %w", err)
	}
	return &CA{cert: caCert, key: key}, nil
}

// LoadCA reads a CA written by its CertPEM and KeyPEM.
func LoadCA(certPEM, keyPEM []byte) (*CA, error) {
	certs, err := cert.ParseCertsPEM(certPEM)
	if err != nil {
		return nil, fmt.Errorf("failed to parse the CA certificate: %w", err)
	}
	key, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("failed to parse the CA key: %w", err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, errors.New("the CA key cannot sign")
	}
	return &CA{cert: certs[0], key: signer}, nil
}

// CertPEM returns the CA's certificate, PEM-encoded.
func (ca *CA) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: cert.CertificateBlockType, Bytes: ca.cert.Raw})
}

// KeyPEM returns the CA's private key, PEM-encoded.
func (ca *CA) KeyPEM() ([]byte, error) {
	return keyutil.MarshalPrivateKeyToPEM(ca.key)
}

// Issue returns a certificate signed by the CA and its private key, both
// PEM-encoded. hosts are the IP addresses and DNS names it serves (none for
// a client certificate); organizations become the groups of a client
// certificate. The certificate is good for both serving and client
// authentication.
func (ca *CA) Issue(commonName string, hosts []string, organizations ...string) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to generate a key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, nil, fmt.Errorf("failed to pick a serial number: %w", err)
	}
	now := time.Now()
	template := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: commonName, Organization: organizations},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(certLifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, host := range hosts {
		if ip := net.ParseIP(host); ip != nil {
			template.IPAddresses = append(template.IPAddresses, ip)
		} else {
			template.DNSNames = append(template.DNSNames, host)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, template, ca.cert, key.Public(), ca.key)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to sign a certificate for %s: %w", commonName, err)
	}
	keyPEM, err = keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to encode a key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: cert.CertificateBlockType, Bytes: der}), keyPEM, nil
}

// NewServiceAccountKey returns a private key for signing ServiceAccount
// tokens and its public key, both PEM-encoded.
func NewServiceAccountKey() (privatePEM, publicPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to generate a signing key: %w", err)
	}
	privatePEM, err = keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to encode the signing key: %w", err)
	}
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to encode the public key: %w", err)
	}
	return privatePEM, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}
