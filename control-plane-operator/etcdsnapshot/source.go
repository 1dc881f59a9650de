package etcdsnapshot

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/snapshot"
	"go.uber.org/zap"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/hypershift-le/hypershift/control-plane-operator/pki"
)

// etcdSource names the etcd member `serve` takes a snapshot of.
type etcdSource struct {
	// Endpoint is the member's client URL (https://IP:2379).
	Endpoint string
	// ServerName is the name its serving certificate is checked against;
	// the endpoint's host when empty.
	ServerName string
	// TLSDir holds ca.crt (etcd's CA), and tls.crt and tls.key (a client
	// certificate etcd accepts).
	TLSDir string
}

// etcdTimeout bounds connecting to etcd and each request before the
// snapshot; the snapshot itself is bounded by the caller's context only.
const etcdTimeout = 30 * time.Second

// snapshotFileName is the snapshot's name in --work-dir.
const snapshotFileName = "snapshot.db"

// takeSnapshot saves a snapshot of the member at src into workDir, as
// `etcdctl snapshot save` does (streamed to a temporary file, fsynced,
// renamed), and returns its path and Info.
//
// The revision is read from the saved file itself (inspectFile), not from
// the member's Status or a response header before the snapshot: both of
// those are only a lower bound (writes land between the request and the
// snapshot), while the file holds exactly the revision a cluster restored
// from it starts at, and `serve --file` reads it the same way.
func takeSnapshot(ctx context.Context, lg *zap.Logger, src etcdSource, workDir string) (string, Info, error) {
	cfg, err := src.clientConfig(lg)
	if err != nil {
		return "", Info{}, err
	}
	member, err := memberName(ctx, cfg)
	if err != nil {
		return "", Info{}, err
	}
	path := filepath.Join(workDir, snapshotFileName)
	ctrl.LoggerFrom(ctx).Info("Taking a snapshot", "endpoint", src.Endpoint, "member", member, "path", path)
	if _, err := snapshot.SaveWithVersion(ctx, lg, cfg, path); err != nil {
		return "", Info{}, fmt.Errorf("failed to take a snapshot of etcd member %s at %s: %w", member, src.Endpoint, err)
	}
	info, err := inspectFile(path, "")
	if err != nil {
		_ = os.Remove(path)
		return "", Info{}, fmt.Errorf("etcd member %s sent a snapshot that does not check out: %w", member, err)
	}
	info.Member = member
	return path, info, nil
}

// memberName asks the member at cfg's one endpoint for its ID, and the
// member list for its name.
func memberName(ctx context.Context, cfg clientv3.Config) (string, error) {
	cli, err := clientv3.New(cfg)
	if err != nil {
		return "", fmt.Errorf("failed to create an etcd client for %s: %w", cfg.Endpoints[0], err)
	}
	defer func() { _ = cli.Close() }()
	ctx, cancel := context.WithTimeout(ctx, etcdTimeout)
	defer cancel()
	status, err := cli.Status(ctx, cfg.Endpoints[0])
	if err != nil {
		return "", fmt.Errorf("failed to get the status of etcd member %s: %w", cfg.Endpoints[0], err)
	}
	members, err := cli.MemberList(ctx)
	if err != nil {
		return "", fmt.Errorf("failed to list etcd members at %s: %w", cfg.Endpoints[0], err)
	}
	for _, m := range members.Members {
		if m.ID == status.Header.MemberId {
			return m.Name, nil
		}
	}
	return "", fmt.Errorf("etcd member %s (ID %x) is not in its own member list", cfg.Endpoints[0], status.Header.MemberId)
}

// clientConfig is an etcd client of the one endpoint, with the client
// certificate of src.TLSDir.
func (src etcdSource) clientConfig(lg *zap.Logger) (clientv3.Config, error) {
	caPEM, err := os.ReadFile(filepath.Join(src.TLSDir, pki.CACertKey))
	if err != nil {
		return clientv3.Config{}, fmt.Errorf("failed to read etcd's CA: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		return clientv3.Config{}, fmt.Errorf("etcd's CA %s holds no PEM certificate", filepath.Join(src.TLSDir, pki.CACertKey))
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(src.TLSDir, pki.TLSCertKey), filepath.Join(src.TLSDir, pki.TLSKeyKey))
	if err != nil {
		return clientv3.Config{}, fmt.Errorf("failed to load the etcd client certificate from %s: %w", src.TLSDir, err)
	}
	return clientv3.Config{
		Endpoints:   []string{src.Endpoint},
		DialTimeout: etcdTimeout,
		Logger:      lg,
		TLS: &tls.Config{
			RootCAs:      roots,
			Certificates: []tls.Certificate{cert},
			ServerName:   src.ServerName,
			MinVersion:   tls.VersionTLS12,
		},
	}, nil
}
