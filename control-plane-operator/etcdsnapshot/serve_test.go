package etcdsnapshot

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"

	"github.com/hypershift-le/hypershift/support/testutil"
)

// TestServeFromEtcdThenReceive takes a snapshot of a real etcd with serve
// and downloads it with receive, started first: receive waits for serve.
func TestServeFromEtcdThenReceive(t *testing.T) {
	cluster := newEtcdCluster(t, 1)
	cli := cluster.start(t)
	keys, lastWrite := putKeys(t, cli, 10)
	tr := newTransfer(t)
	addr := fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t))
	output := filepath.Join(t.TempDir(), "backup.db")
	workDir := t.TempDir()

	received := newCommand(t, "receive", "--url=https://"+addr+SnapshotPath, "--transfer-dir="+tr.dir, "--output="+output, "--timeout=20s").start(t.Context())
	served := newCommand(t, "serve", "--listen="+addr, "--transfer-dir="+tr.dir, "--work-dir="+workDir,
		"--etcd-endpoint="+cluster.members[0].clientURL, "--etcd-server-name="+etcdServerName, "--etcd-tls-dir="+cluster.clientTLSDir).start(t.Context())

	got := wait(t, received).info(t)
	want := wait(t, served).info(t)
	if want.Member != cluster.members[0].name {
		t.Errorf("serve reported member %q, want %q", want.Member, cluster.members[0].name)
	}
	if got != want {
		t.Errorf("receive reported %+v, serve reported %+v", got, want)
	}
	if want.Revision < lastWrite {
		t.Errorf("the snapshot's revision %d is before the last write's, %d", want.Revision, lastWrite)
	}
	sum, err := fileSHA256(output)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(output)
	if err != nil {
		t.Fatal(err)
	}
	if sum != want.SHA256 || st.Size() != want.Size {
		t.Errorf("the received file has sha256 %s and %d bytes, serve reported %s and %d", sum, st.Size(), want.SHA256, want.Size)
	}
	// etcdutl's own reading of the file: the revision, and the keys.
	status, err := snapshot.NewV3(zap.NewNop()).Status(output)
	if err != nil {
		t.Fatalf("etcdutl cannot read the received snapshot: %v", err)
	}
	if status.Revision != want.Revision {
		t.Errorf("etcdutl reads revision %d from the snapshot, serve reported %d", status.Revision, want.Revision)
	}
	if status.TotalKey < len(keys) {
		t.Errorf("etcdutl counts %d keys in the snapshot, want at least %d", status.TotalKey, len(keys))
	}
	if entries, _ := os.ReadDir(workDir); len(entries) != 0 {
		t.Errorf("serve left %d files in its work directory", len(entries))
	}
}

// TestServeStopsWhenTerminated: serve ended before every expected download
// fails, saying how many completed.
func TestServeStopsWhenTerminated(t *testing.T) {
	path, _, _ := snapshotFixture(t)
	sum, err := fileSHA256(path)
	if err != nil {
		t.Fatal(err)
	}
	tr := newTransfer(t)
	ctx, terminate := context.WithCancel(t.Context())
	defer terminate()
	addr := fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t))
	served := newCommand(t, "serve", "--listen="+addr, "--transfer-dir="+tr.dir, "--file="+path, "--expect-sha256="+sum, "--downloads=2").start(ctx)
	output := filepath.Join(t.TempDir(), "backup.db")
	wait(t, newCommand(t, "receive", "--url=https://"+addr+SnapshotPath, "--transfer-dir="+tr.dir, "--output="+output, "--timeout=20s").start(t.Context())).info(t)

	terminate()
	if got, want := wait(t, served).failure(t), "stopped after 1 of 2 downloads"; got != want {
		t.Errorf("serve failed with %q, want %q", got, want)
	}
}

// TestServeRefusesABadBackup: a backup file that is missing, is not the
// one recorded, or was corrupted after etcd took it, is refused before
// serve listens: the port is held by the test, so a serve that tried to
// listen would fail with another error.
func TestServeRefusesABadBackup(t *testing.T) {
	path, _, _ := snapshotFixture(t)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	goodSum, err := fileSHA256(path)
	if err != nil {
		t.Fatal(err)
	}
	flipped := append([]byte(nil), good...)
	flipped[len(flipped)/2] ^= 0xff
	tooShort := good[:len(good)-1]

	cases := []struct {
		name string
		// data is the file's content (none: no file); expect is
		// --expect-sha256, the file's own sha256 when empty.
		data   []byte
		expect string
		want   string
	}{
		{
			name: "when the file is missing, it says so",
			want: "does not exist",
		},
		{
			name:   "when a byte was flipped and the recorded sha256 is the original's, it says the file is corrupt",
			data:   flipped,
			expect: goodSum,
			want:   "is corrupt: its sha256 is",
		},
		{
			name: "when a byte was flipped and the recorded sha256 is the flipped file's, etcd's appended hash catches it",
			data: flipped,
			want: "is corrupt: the sha256 of its database is",
		},
		{
			name: "when the file does not end with etcd's appended hash, it is not an etcd snapshot",
			data: tooShort,
			want: "is not an etcd snapshot",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "backup.db")
			expect := tc.expect
			if tc.data != nil {
				writeFile(t, file, tc.data)
				if expect == "" {
					if expect, err = fileSHA256(file); err != nil {
						t.Fatal(err)
					}
				}
			} else {
				expect = goodSum
			}
			held, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = held.Close() }()
			start := time.Now()
			message := newCommand(t, "serve", "--listen="+held.Addr().String(), "--transfer-dir="+newTransfer(t).dir, "--file="+file, "--expect-sha256="+expect).run(t.Context()).failure(t)
			if !strings.Contains(message, tc.want) || !strings.Contains(message, file) {
				t.Errorf("serve failed with %q, want it to name %s and say %q", message, file, tc.want)
			}
			if time.Since(start) > 10*time.Second {
				t.Errorf("serve took %s to refuse the file", time.Since(start))
			}
		})
	}
}
