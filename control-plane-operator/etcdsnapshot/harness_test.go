package etcdsnapshot

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/snapshot"
	"go.uber.org/zap"

	"github.com/hypershift-le/hypershift/support/testutil"
)

// TestMain removes the shared snapshot fixture after the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if fixture.dir != "" {
		_ = os.RemoveAll(fixture.dir)
	}
	os.Exit(code)
}

// fixture is a snapshot of a real etcd holding fixtureKeys, taken once
// per test run by `etcdctl snapshot save`'s own code, not ours.
var fixture struct {
	once     sync.Once
	ok       bool
	dir      string
	path     string
	keys     map[string]string
	revision int64
}

// snapshotFixture copies the fixture snapshot into a new temporary
// directory, and returns the copy's path and the fixture's keys and last
// write's revision.
func snapshotFixture(t *testing.T) (string, map[string]string, int64) {
	t.Helper()
	etcdBinary(t)
	fixture.once.Do(func() {
		cluster := newEtcdCluster(t, 1)
		cli := cluster.start(t)
		fixture.keys, fixture.revision = putKeys(t, cli, 20)
		dir, err := os.MkdirTemp("", "etcdsnapshot-fixture-")
		if err != nil {
			t.Fatal(err)
		}
		fixture.dir, fixture.path = dir, filepath.Join(dir, "fixture.db")
		cfg := memberClientConfig(t, cluster)
		if _, err := snapshot.SaveWithVersion(t.Context(), zap.NewNop(), cfg, fixture.path); err != nil {
			t.Fatalf("failed to save the fixture snapshot: %v", err)
		}
		fixture.ok = true
	})
	if !fixture.ok {
		t.Fatal("the snapshot fixture failed in an earlier test")
	}
	path := filepath.Join(t.TempDir(), "snapshot.db")
	data, err := os.ReadFile(fixture.path)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, data)
	return path, fixture.keys, fixture.revision
}

// memberClientConfig is a client configuration of the cluster's first
// member only, as a snapshot needs.
func memberClientConfig(t *testing.T, c *etcdCluster) clientv3.Config {
	t.Helper()
	cfg, err := etcdSource{Endpoint: c.members[0].clientURL, ServerName: etcdServerName, TLSDir: c.clientTLSDir}.clientConfig(zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// testTransfer is a transfer Secret written to a directory.
type testTransfer struct {
	dir             string
	certPEM, keyPEM []byte
	token           string
}

// newTransfer writes a new transfer Secret: a new certificate and token.
func newTransfer(t *testing.T) *testTransfer {
	t.Helper()
	certPEM, key := selfSigned(t)
	return writeTransfer(t, certPEM, key, randomToken(t))
}

// withToken is a copy of the transfer Secret with another token.
func (tr *testTransfer) withToken(t *testing.T, token string) *testTransfer {
	return writeTransfer(t, tr.certPEM, tr.keyPEM, token)
}

// withNewCert is a copy of the transfer Secret with another certificate.
func (tr *testTransfer) withNewCert(t *testing.T) *testTransfer {
	certPEM, key := selfSigned(t)
	return writeTransfer(t, certPEM, key, tr.token)
}

func writeTransfer(t *testing.T, certPEM, keyPEM []byte, token string) *testTransfer {
	t.Helper()
	tr := &testTransfer{dir: t.TempDir(), certPEM: certPEM, keyPEM: keyPEM, token: token}
	writeFile(t, filepath.Join(tr.dir, TransferCertKey), certPEM)
	writeFile(t, filepath.Join(tr.dir, TransferKeyKey), keyPEM)
	writeFile(t, filepath.Join(tr.dir, TransferTokenKey), []byte(token+"\n"))
	return tr
}

func randomToken(t *testing.T) string {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// result is what a command returned, and wrote as its termination
// message.
type result struct {
	err     error
	message string
}

// info decodes the termination message of a command that succeeded.
func (r result) info(t *testing.T) Info {
	t.Helper()
	if r.err != nil {
		t.Fatalf("the command failed: %v", r.err)
	}
	var info Info
	if err := json.Unmarshal([]byte(r.message), &info); err != nil {
		t.Fatalf("the termination message %q is not an Info: %v", r.message, err)
	}
	return info
}

// failure checks that the command failed, with the same one-line message
// in its termination message, and returns the message.
func (r result) failure(t *testing.T) string {
	t.Helper()
	if r.err == nil {
		t.Fatalf("the command succeeded (%s), want a failure", r.message)
	}
	t.Logf("the command failed as expected: %s", r.message)
	if r.message != r.err.Error() {
		t.Errorf("the termination message is %q, want the error %q", r.message, r.err.Error())
	}
	return r.message
}

// command is `etcd-snapshot <args>` with a termination message path of
// its own.
type command struct {
	args        []string
	messagePath string
}

func newCommand(t *testing.T, args ...string) *command {
	t.Helper()
	path := filepath.Join(t.TempDir(), "termination-log")
	return &command{args: append(args, "--termination-message-path="+path), messagePath: path}
}

// run runs the command until it returns; it may run in a goroutine.
func (c *command) run(ctx context.Context) result {
	cmd := NewCommand()
	cmd.SetArgs(c.args)
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	err := cmd.ExecuteContext(ctx)
	message, _ := os.ReadFile(c.messagePath)
	return result{err: err, message: string(message)}
}

// start runs the command in a goroutine.
func (c *command) start(ctx context.Context) <-chan result {
	done := make(chan result, 1)
	go func() { done <- c.run(ctx) }()
	return done
}

// startServe starts `etcd-snapshot serve <args>` on a free loopback port
// with the transfer Secret tr, and waits until it is ready; it returns the
// snapshot's URL and the command's result to come. The command is stopped
// when the test ends.
func startServe(t *testing.T, tr *testTransfer, args ...string) (string, <-chan result) {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t))
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	done := newCommand(t, append([]string{"serve", "--listen=" + addr, "--transfer-dir=" + tr.dir}, args...)...).start(ctx)
	probe := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, Timeout: time.Second}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if resp, err := probe.Get("https://" + addr + HealthzPath); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return "https://" + addr + SnapshotPath, done
			}
		}
		select {
		case r := <-done:
			t.Fatalf("serve ended before it was ready: %v (%s)", r.err, r.message)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("serve was not ready within 20s")
		}
	}
}

// wait returns the command's result, or fails the test after 20s.
func wait(t *testing.T, done <-chan result) result {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(20 * time.Second):
		t.Fatal("the command did not end within 20s")
		return result{}
	}
}

// fakeServer serves h over TLS with the transfer Secret's certificate, as
// serve would, and counts the connections made to it.
func fakeServer(t *testing.T, tr *testTransfer, h http.Handler) (string, *atomic.Int64) {
	t.Helper()
	cert, err := tls.X509KeyPair(tr.certPEM, tr.keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.URL + SnapshotPath, &conns
}
