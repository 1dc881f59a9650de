package main

import (
	"crypto/tls"
	"fmt"
	"net"

	certutil "k8s.io/client-go/util/cert"
)

// selfSigned returns a TLS configuration with a self-signed certificate
// for the host of listen, localhost and the loopback addresses.
func selfSigned(listen string) (*tls.Config, error) {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return nil, fmt.Errorf("invalid --listen %q: %w", listen, err)
	}
	var ips []net.IP
	if ip := net.ParseIP(host); ip != nil && !ip.IsUnspecified() {
		ips = append(ips, ip)
	}
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("localhost", ips, nil)
	if err != nil {
		return nil, fmt.Errorf("failed to generate a certificate: %w", err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("failed to load the certificate: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}
