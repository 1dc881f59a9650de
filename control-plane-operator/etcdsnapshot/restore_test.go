package etcdsnapshot

import (
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestRestore restores every member of a new cluster from one backup
// served once per member, starts the cluster and reads the keys back.
func TestRestore(t *testing.T) {
	cases := []struct {
		name    string
		members int
	}{
		{name: "a member restored from the backup serves its keys", members: 1},
		{name: "three members restored from the same backup form a cluster that serves its keys", members: 3},
	}
	for _, tc := range cases {
		members := tc.members
		t.Run(tc.name, func(t *testing.T) {
			path, keys, revision := snapshotFixture(t)
			sum, err := fileSHA256(path)
			if err != nil {
				t.Fatal(err)
			}
			tr := newTransfer(t)
			url, served := startServe(t, tr, "--file="+path, "--expect-sha256="+sum, "--downloads="+strconv.Itoa(members))
			cluster := newEtcdCluster(t, members)
			// A crash of an earlier restore left its temporary directory.
			if err := os.MkdirAll(filepath.Join(cluster.members[0].dataDir+".restoring", "member", "wal"), 0o700); err != nil {
				t.Fatal(err)
			}

			// Three members read the URL from the transfer directory, as a
			// restored cluster's members do (their pod template names no
			// URL); one member is given it.
			source := "--url=" + url
			if members > 1 {
				if err := os.WriteFile(filepath.Join(tr.dir, TransferURLKey), []byte(url+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				source = "--timeout=15s"
			}
			var restores []<-chan result
			for _, m := range cluster.members {
				restores = append(restores, newCommand(t, "restore", source, "--transfer-dir="+tr.dir, "--timeout=15s",
					"--data-dir="+m.dataDir, "--name="+m.name, "--initial-cluster="+cluster.initialCluster(),
					"--initial-cluster-token="+cluster.token, "--initial-advertise-peer-urls="+m.peerURL).start(t.Context()))
			}
			for i, done := range restores {
				m := cluster.members[i]
				want := Info{Revision: revision, SHA256: sum, Size: fileSize(t, path), Member: m.name}
				if got := wait(t, done).info(t); got != want {
					t.Errorf("restore of %s reported %+v, want %+v", m.name, got, want)
				}
				for _, leftover := range []string{m.dataDir + ".snapshot.db", m.dataDir + ".snapshot.db.partial", m.dataDir + ".restoring"} {
					if _, err := os.Stat(leftover); !errors.Is(err, fs.ErrNotExist) {
						t.Errorf("restore left %s (stat: %v)", leftover, err)
					}
				}
			}
			wait(t, served).info(t)

			cli := cluster.start(t)
			checkKeys(t, cli, keys)
			list, err := cli.MemberList(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if len(list.Members) != members {
				t.Errorf("the restored cluster has %d members, want %d", len(list.Members), members)
			}
			resp, err := cli.Get(t.Context(), "/registry/test/key-00")
			if err != nil {
				t.Fatal(err)
			}
			if resp.Header.Revision < revision {
				t.Errorf("the restored cluster is at revision %d, before the snapshot's %d", resp.Header.Revision, revision)
			}
		})
	}
}

// TestRestoreAfterARestart: a member that has data is never rolled back,
// and a download that finished before a restart is not made again; in
// neither case does restore reach the server, which refuses everyone.
func TestRestoreAfterARestart(t *testing.T) {
	cases := []struct {
		name string
		// member is whether data-dir/member exists; downloaded whether
		// data-dir.snapshot.db does.
		member, downloaded bool
		// wantConns is how many connections reach the server.
		wantConns int64
		// want is in the error; empty for a success.
		want string
	}{
		{name: "when data-dir/member exists, nothing is fetched and the member is kept", member: true, downloaded: true},
		{name: "when the snapshot was downloaded before, it is restored without fetching it again", downloaded: true},
		{name: "when neither exists, the snapshot is fetched", wantConns: 1, want: "refused the transfer token"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTransfer(t)
			url, conns := fakeServer(t, tr, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				http.Error(w, "no", http.StatusUnauthorized)
			}))
			dataDir := filepath.Join(t.TempDir(), "data")
			marker := filepath.Join(dataDir, "member", "snap", "db")
			if tc.member {
				if err := os.MkdirAll(filepath.Dir(marker), 0o700); err != nil {
					t.Fatal(err)
				}
				writeFile(t, marker, []byte("the member's data"))
			}
			var want Info
			if tc.downloaded {
				path, _, revision := snapshotFixture(t)
				if err := os.Rename(path, dataDir+".snapshot.db"); err != nil {
					t.Fatal(err)
				}
				sum, err := fileSHA256(dataDir + ".snapshot.db")
				if err != nil {
					t.Fatal(err)
				}
				want = Info{Revision: revision, Size: fileSize(t, dataDir+".snapshot.db"), SHA256: sum}
			}
			r := newCommand(t, "restore", "--url="+url, "--transfer-dir="+tr.dir, "--timeout=15s",
				"--data-dir="+dataDir, "--name=etcd-0", "--initial-cluster=etcd-0=https://etcd-0:2380",
				"--initial-cluster-token=test", "--initial-advertise-peer-urls=https://etcd-0:2380").run(t.Context())
			if got := conns.Load(); got != tc.wantConns {
				t.Errorf("%d connections reached the server, want %d", got, tc.wantConns)
			}
			if tc.want != "" {
				if message := r.failure(t); !strings.Contains(message, tc.want) {
					t.Errorf("restore failed with %q, want %q in it", message, tc.want)
				}
				return
			}
			if _, err := os.Stat(dataDir + ".snapshot.db"); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("restore left %s.snapshot.db (stat: %v)", dataDir, err)
			}
			if tc.member {
				if got := r.info(t); got != (Info{Member: "etcd-0"}) {
					t.Errorf("restore reported %+v, want only the member", got)
				}
				checkFile(t, marker, []byte("the member's data"))
				return
			}
			want.Member = "etcd-0"
			if got := r.info(t); got != want {
				t.Errorf("restore reported %+v, want %+v", got, want)
			}
			if _, err := os.Stat(filepath.Join(dataDir, "member", "wal")); err != nil {
				t.Errorf("restore made no member: %v", err)
			}
		})
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}
