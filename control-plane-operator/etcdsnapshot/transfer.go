package etcdsnapshot

import (
	"bytes"
	"crypto/subtle"
	"crypto/tls"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The transfer Secret's keys, which are file names where it is mounted
// (--transfer-dir).
const (
	// TransferCertKey holds the PEM certificate the serving pod presents
	// and the client pins.
	TransferCertKey = "tls.crt"
	// TransferKeyKey holds the PEM private key of that certificate; only
	// the serving pod needs it.
	TransferKeyKey = "tls.key"
	// TransferTokenKey holds the bearer token the serving pod requires.
	TransferTokenKey = "token"
	// TransferURLKey, in a restore's transfer Secret, holds the snapshot's
	// URL (restore without --url reads it).
	TransferURLKey = "url"
)

// The transfer endpoint.
const (
	// TransferPort is the port `serve` listens on by default.
	TransferPort = 8443
	// SnapshotPath is the path at which `serve` serves the snapshot.
	SnapshotPath = "/snapshot"
	// HealthzPath answers 200 once the snapshot is ready to download
	// (nothing listens before): the serving pod's readiness probe.
	HealthzPath = "/healthz"
)

// The response headers that describe the snapshot, beside Content-Length.
const (
	// SHA256Header is the hex sha256 of the whole snapshot file.
	SHA256Header = "X-Etcd-Snapshot-Sha256"
	// RevisionHeader is the etcd revision the snapshot holds.
	RevisionHeader = "X-Etcd-Snapshot-Revision"
	// MemberHeader names the etcd member the snapshot was taken from, when
	// the server took it (not when it serves a file).
	MemberHeader = "X-Etcd-Snapshot-Member"
)

// DefaultTransferDir is where --transfer-dir points by default.
const DefaultTransferDir = "/etc/etcd-snapshot/transfer"

// Info describes a snapshot; every command writes it, as JSON, to its
// termination message on success.
type Info struct {
	// Revision is the etcd revision the snapshot holds: the revision a
	// cluster restored from it starts at.
	Revision int64 `json:"revision"`
	// Size is the size of the snapshot file in bytes.
	Size int64 `json:"size"`
	// SHA256 is the hex sha256 of the whole snapshot file.
	SHA256 string `json:"sha256"`
	// Member is the name of the etcd member the snapshot was taken from
	// (serve), or restored into (restore).
	Member string `json:"member,omitempty"`
}

// transfer is what a transfer Secret holds.
type transfer struct {
	dir     string
	certPEM []byte
	keyPEM  []byte
	token   string
}

// loadTransfer reads the transfer Secret mounted at dir; the key only when
// withKey (the serving side).
func loadTransfer(dir string, withKey bool) (*transfer, error) {
	t := &transfer{dir: dir}
	var err error
	if t.certPEM, err = os.ReadFile(filepath.Join(dir, TransferCertKey)); err != nil {
		return nil, fmt.Errorf("failed to read the transfer certificate: %w", err)
	}
	if withKey {
		if t.keyPEM, err = os.ReadFile(filepath.Join(dir, TransferKeyKey)); err != nil {
			return nil, fmt.Errorf("failed to read the transfer key: %w", err)
		}
	}
	token, err := os.ReadFile(filepath.Join(dir, TransferTokenKey))
	if err != nil {
		return nil, fmt.Errorf("failed to read the transfer token: %w", err)
	}
	if t.token = strings.TrimSpace(string(token)); t.token == "" {
		return nil, fmt.Errorf("the transfer token %s is empty", filepath.Join(dir, TransferTokenKey))
	}
	return t, nil
}

// serverTLS is the serving side's TLS: the transfer certificate.
func (t *transfer) serverTLS() (*tls.Config, error) {
	cert, err := tls.X509KeyPair(t.certPEM, t.keyPEM)
	if err != nil {
		return nil, fmt.Errorf("the transfer certificate and key in %s do not make a key pair: %w", t.dir, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// clientTLS is the client side's TLS: it accepts the transfer certificate
// only, byte for byte, whatever the address dialled.
func (t *transfer) clientTLS() (*tls.Config, error) {
	block, _ := pem.Decode(t.certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("the transfer certificate %s holds no PEM certificate", filepath.Join(t.dir, TransferCertKey))
	}
	pinned := block.Bytes
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		// The certificate is pinned by VerifyConnection instead: the client
		// dials a Service's ClusterIP, which no certificate could name in
		// advance, and a self-signed certificate has no chain to verify.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 || !bytes.Equal(cs.PeerCertificates[0].Raw, pinned) {
				return errNotPinned
			}
			return nil
		},
	}, nil
}

// errNotPinned is the handshake error when the server presents another
// certificate than the transfer Secret's.
var errNotPinned = errors.New("the server's certificate is not the transfer Secret's")

// authorized tells whether the request carries the transfer token,
// compared in constant time.
func (t *transfer) authorized(authorization string) bool {
	want := "Bearer " + t.token
	return subtle.ConstantTimeCompare([]byte(authorization), []byte(want)) == 1
}
