package etcdsnapshot

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// testCA signs the certificates of the test etcd clusters.
type testCA struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	template := certTemplate("test-etcd-ca")
	template.IsCA = true
	template.BasicConstraintsValid = true
	template.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	certPEM, key := signCert(t, template, nil, nil)
	block, _ := pem.Decode(certPEM)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key, certPEM: certPEM}
}

// writeLeaf writes ca.crt, and tls.crt and tls.key of a new leaf
// certificate this CA signs, into a new directory, and returns it.
func (ca *testCA) writeLeaf(t *testing.T, commonName string, usages []x509.ExtKeyUsage, dnsNames []string, ips []net.IP) string {
	t.Helper()
	template := certTemplate(commonName)
	template.ExtKeyUsage = usages
	template.DNSNames = dnsNames
	template.IPAddresses = ips
	certPEM, key := signCert(t, template, ca.cert, ca.key)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "ca.crt"), ca.certPEM)
	writeFile(t, filepath.Join(dir, "tls.crt"), certPEM)
	writeFile(t, filepath.Join(dir, "tls.key"), keyPEM(t, key))
	return dir
}

// selfSigned returns a new self-signed serving certificate and its key,
// in PEM: what the operator puts in a transfer Secret.
func selfSigned(t *testing.T) (certPEM, keyPEMBytes []byte) {
	t.Helper()
	template := certTemplate("etcd-snapshot-transfer")
	template.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	certPEM, key := signCert(t, template, nil, nil)
	return certPEM, keyPEM(t, key)
}

func certTemplate(commonName string) *x509.Certificate {
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: commonName},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
}

// signCert signs template with parentKey (self-signed when parent is nil)
// and returns the PEM certificate and its new key.
func signCert(t *testing.T, template, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) ([]byte, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if parent == nil {
		parent, parentKey = template, key
	}
	der, err := x509.CreateCertificate(rand.Reader, template, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), key
}

func keyPEM(t *testing.T, key *ecdsa.PrivateKey) []byte {
	t.Helper()
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
