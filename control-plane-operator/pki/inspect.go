package pki

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"fmt"
	"net"
	"slices"
	"sort"
	"time"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// Reasons a Secret is written. They are stable text for events.
const (
	reasonMissing     = "it did not exist"
	reasonCertInvalid = "its certificate does not parse"
	reasonKeyInvalid  = "its private key does not parse"
	reasonKeyMismatch = "its private key does not match its certificate"
	reasonNotSigned   = "its certificate is not signed by the current CA"
	reasonNotYetValid = "its certificate is not valid yet"
	reasonExpired     = "its certificate has expired"
	reasonRenew       = "its certificate is past two thirds of its lifetime"
	reasonSubject     = "its subject must change"
	reasonNames       = "its DNS names or IP addresses must change"
	reasonUsages      = "its key usages must change"
	reasonCAOutdated  = "its CA certificate is not the current CA"
	reasonServer      = "its server must change"
	// reasonKubeconfigInvalid says a kubeconfig Secret does not parse.
	reasonKubeconfigInvalid = "its kubeconfig does not parse"
)

// parseCA parses a CA certificate and key. It fails when either does not
// parse, the key is not the certificate's, or the certificate is not a CA.
func parseCA(certPEM, keyPEM []byte) (*CA, error) {
	cert, err := parseCert(certPEM)
	if err != nil {
		return nil, err
	}
	if !cert.IsCA {
		return nil, fmt.Errorf("the certificate is not a CA")
	}
	key, err := parseKey(keyPEM)
	if err != nil {
		return nil, err
	}
	if !samePublicKey(cert.PublicKey, key.Public()) {
		return nil, fmt.Errorf("the private key does not match the certificate")
	}
	return &CA{Cert: cert, Key: key, CertPEM: certPEM}, nil
}

// parseCert parses exactly one PEM certificate.
func parseCert(certPEM []byte) (*x509.Certificate, error) {
	certs, err := certutil.ParseCertsPEM(certPEM)
	if err != nil {
		return nil, fmt.Errorf("the certificate does not parse: %w", err)
	}
	if len(certs) != 1 {
		return nil, fmt.Errorf("want one certificate, found %d", len(certs))
	}
	return certs[0], nil
}

// parseKey parses a PEM private key that can sign.
func parseKey(keyPEM []byte) (crypto.Signer, error) {
	parsed, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("the private key does not parse: %w", err)
	}
	key, ok := parsed.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("the private key of type %T cannot sign", parsed)
	}
	return key, nil
}

// samePublicKey compares two public keys by their PKIX encoding.
func samePublicKey(a, b crypto.PublicKey) bool {
	da, errA := x509.MarshalPKIXPublicKey(a)
	db, errB := x509.MarshalPKIXPublicKey(b)
	return errA == nil && errB == nil && bytes.Equal(da, db)
}

// checkLeaf returns why a certificate and key must be re-issued for spec
// under ca at now, and the cause; "" when they can be kept.
func checkLeaf(certPEM, keyPEM []byte, spec certSpec, ca *CA, now time.Time) (string, Cause) {
	if certPEM == nil && keyPEM == nil {
		return reasonMissing, Missing
	}
	cert, err := parseCert(certPEM)
	if err != nil {
		return reasonCertInvalid, Damaged
	}
	key, err := parseKey(keyPEM)
	if err != nil {
		return reasonKeyInvalid, Damaged
	}
	switch {
	case !samePublicKey(cert.PublicKey, key.Public()):
		return reasonKeyMismatch, Damaged
	case cert.CheckSignatureFrom(ca.Cert) != nil:
		return reasonNotSigned, Damaged
	case now.Before(cert.NotBefore):
		return reasonNotYetValid, Damaged
	case !now.Before(cert.NotAfter):
		return reasonExpired, Damaged
	case !now.Before(RenewalTime(cert)):
		return reasonRenew, Due
	case cert.Subject.CommonName != spec.CommonName || !sameStrings(cert.Subject.Organization, spec.Organization):
		return reasonSubject, Changed
	case !sameStrings(cert.DNSNames, spec.DNSNames) || !sameStrings(ipStrings(cert.IPAddresses), ipStrings(spec.IPAddresses)):
		return reasonNames, Changed
	case !slices.Equal(cert.ExtKeyUsage, spec.Usages):
		return reasonUsages, Changed
	}
	return "", ""
}

// RenewalTime is when a certificate is due for re-issue: once two thirds
// of its lifetime have passed.
func RenewalTime(cert *x509.Certificate) time.Time {
	lifetime := cert.NotAfter.Sub(cert.NotBefore)
	return cert.NotBefore.Add(lifetime * 2 / 3)
}

// sameStrings compares two lists as sets.
func sameStrings(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	sort.Strings(a)
	sort.Strings(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

func ipStrings(ips []net.IP) []string {
	out := make([]string, 0, len(ips))
	for _, ip := range ips {
		out = append(out, ip.String())
	}
	return out
}
