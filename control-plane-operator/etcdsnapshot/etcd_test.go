package etcdsnapshot

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/hypershift-le/hypershift/support/testutil"
	"github.com/hypershift-le/hypershift/test/testenv"
)

// etcdServerName is the name the test etcd's serving certificate holds,
// as the hosted cluster's etcd-client Service name.
const etcdServerName = "etcd-client"

// etcdBinary returns the etcd that `make testbin` builds ($KUBEBUILDER_ASSETS
// or the repository's bin/), or skips the test without it.
func etcdBinary(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		root, err := testenv.RepositoryRoot()
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(root, "bin")
	}
	path := filepath.Join(dir, "etcd")
	if _, err := os.Stat(path); err != nil {
		t.Skipf("%s is missing: run `make testbin` to build etcd", path)
	}
	return path
}

// etcdCluster is a real etcd cluster of local processes: clients over TLS
// with client certificates, peers over plain HTTP on loopback.
type etcdCluster struct {
	// serverTLSDir and clientTLSDir hold ca.crt, tls.crt and tls.key: the
	// members' serving certificate, and a client certificate.
	serverTLSDir, clientTLSDir string
	token                      string
	members                    []etcdMember
}

// etcdMember is one member's name, URLs and data directory.
type etcdMember struct {
	name, clientURL, peerURL, dataDir string
}

// newEtcdCluster describes a cluster of n members on free loopback ports
// with data directories in new temporary directories; start starts it.
func newEtcdCluster(t *testing.T, n int) *etcdCluster {
	t.Helper()
	ca := newTestCA(t)
	c := &etcdCluster{
		serverTLSDir: ca.writeLeaf(t, etcdServerName, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, []string{etcdServerName, "localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)}),
		clientTLSDir: ca.writeLeaf(t, "root", []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, nil, nil),
		token:        "test-" + t.Name(),
	}
	for i := range n {
		c.members = append(c.members, etcdMember{
			name:      fmt.Sprintf("etcd-%d", i),
			clientURL: fmt.Sprintf("https://127.0.0.1:%d", testutil.FreePort(t)),
			peerURL:   fmt.Sprintf("http://127.0.0.1:%d", testutil.FreePort(t)),
			dataDir:   filepath.Join(t.TempDir(), "data"),
		})
	}
	return c
}

// initialCluster is the cluster's --initial-cluster.
func (c *etcdCluster) initialCluster() string {
	var parts []string
	for _, m := range c.members {
		parts = append(parts, m.name+"="+m.peerURL)
	}
	return strings.Join(parts, ",")
}

// start starts every member, and returns a client of the cluster once it
// answers; the members are killed when the test ends.
func (c *etcdCluster) start(t *testing.T) *clientv3.Client {
	t.Helper()
	bin := etcdBinary(t)
	for _, m := range c.members {
		c.startMember(t, bin, m)
	}
	cli := c.client(t)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	for {
		_, err := cli.Get(ctx, "health")
		if err == nil {
			return cli
		}
		if ctx.Err() != nil {
			t.Fatalf("etcd did not answer within 20s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (c *etcdCluster) startMember(t *testing.T, bin string, m etcdMember) {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), m.name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin,
		"--name="+m.name,
		"--data-dir="+m.dataDir,
		"--listen-client-urls="+m.clientURL,
		"--advertise-client-urls="+m.clientURL,
		"--listen-peer-urls="+m.peerURL,
		"--initial-advertise-peer-urls="+m.peerURL,
		"--initial-cluster="+c.initialCluster(),
		"--initial-cluster-state=new",
		"--initial-cluster-token="+c.token,
		"--client-cert-auth=true",
		"--trusted-ca-file="+filepath.Join(c.serverTLSDir, "ca.crt"),
		"--cert-file="+filepath.Join(c.serverTLSDir, "tls.crt"),
		"--key-file="+filepath.Join(c.serverTLSDir, "tls.key"),
		"--log-level=warn",
		"--unsafe-no-fsync=true",
	)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// etcd dies with the test binary, even when it is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("failed to start etcd: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = logFile.Close()
		if t.Failed() {
			if out, err := os.ReadFile(logPath); err == nil {
				t.Logf("etcd member %s's log:\n%s", m.name, out)
			}
		}
	})
}

// client is a client of every member, with the client certificate.
func (c *etcdCluster) client(t *testing.T) *clientv3.Client {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(filepath.Join(c.clientTLSDir, "tls.crt"), filepath.Join(c.clientTLSDir, "tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(filepath.Join(c.clientTLSDir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	var endpoints []string
	for _, m := range c.members {
		endpoints = append(endpoints, m.clientURL)
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
		TLS:         &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}, ServerName: etcdServerName, MinVersion: tls.VersionTLS12},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// putKeys writes n keys, and returns them and the revision of the last
// write.
func putKeys(t *testing.T, cli *clientv3.Client, n int) (map[string]string, int64) {
	t.Helper()
	keys := map[string]string{}
	var revision int64
	for i := range n {
		k, v := fmt.Sprintf("/registry/test/key-%02d", i), fmt.Sprintf("value-%d", i)
		resp, err := cli.Put(t.Context(), k, v)
		if err != nil {
			t.Fatalf("failed to put %s: %v", k, err)
		}
		keys[k], revision = v, resp.Header.Revision
	}
	return keys, revision
}

// checkKeys fails unless the cluster holds exactly keys under
// /registry/test/.
func checkKeys(t *testing.T, cli *clientv3.Client, keys map[string]string) {
	t.Helper()
	resp, err := cli.Get(t.Context(), "/registry/test/", clientv3.WithPrefix())
	if err != nil {
		t.Fatalf("failed to read the keys back: %v", err)
	}
	got := map[string]string{}
	for _, kv := range resp.Kvs {
		got[string(kv.Key)] = string(kv.Value)
	}
	if len(got) != len(keys) {
		t.Fatalf("the cluster holds %d keys, want %d: %v", len(got), len(keys), got)
	}
	for k, v := range keys {
		if got[k] != v {
			t.Errorf("key %s is %q, want %q", k, got[k], v)
		}
	}
}
