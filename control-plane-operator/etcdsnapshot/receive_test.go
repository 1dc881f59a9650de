package etcdsnapshot

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hypershift-le/hypershift/support/testutil"
)

// TestReceive: what receive refuses, and what it retries, against serve
// or against a server that misbehaves.
func TestReceive(t *testing.T) {
	path, _, revision := snapshotFixture(t)
	snapshotData, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := fileSHA256(path)
	if err != nil {
		t.Fatal(err)
	}
	// serveFixture answers as serve does, with announced sha256.
	serveFixture := func(w http.ResponseWriter, announced string) {
		w.Header().Set(SHA256Header, announced)
		w.Header().Set(RevisionHeader, strconv.FormatInt(revision, 10))
		w.Header().Set("Content-Length", strconv.Itoa(len(snapshotData)))
		_, _ = w.Write(snapshotData)
	}

	cases := []struct {
		name string
		// server returns the URL receive downloads from, given the
		// transfer Secret the server uses.
		server func(t *testing.T, tr *testTransfer) string
		// client is the transfer Secret receive uses.
		client func(t *testing.T, tr *testTransfer) *testTransfer
		// existing is the output file before receive, if any.
		existing []byte
		// timeout is receive's --timeout; 15s when empty.
		timeout string
		// want is in the error; empty for a success.
		want string
	}{
		{
			name: "when the token does not match, serve answers 401 and receive says the token does not match, without retrying",
			server: func(t *testing.T, tr *testTransfer) string {
				url, _ := startServe(t, tr, "--file="+path, "--expect-sha256="+sum)
				return url
			},
			client: func(t *testing.T, tr *testTransfer) *testTransfer { return tr.withToken(t, "another-token") },
			want:   "refused the transfer token (401 Unauthorized)",
		},
		{
			name: "when the server presents another certificate than the pinned one, receive refuses it, without retrying",
			server: func(t *testing.T, tr *testTransfer) string {
				url, _ := startServe(t, tr, "--file="+path, "--expect-sha256="+sum)
				return url
			},
			client: func(t *testing.T, tr *testTransfer) *testTransfer { return tr.withNewCert(t) },
			want:   "it presented a certificate other than",
		},
		{
			name: "when the body does not match the announced sha256, receive removes the partial file and fails",
			server: func(t *testing.T, tr *testTransfer) string {
				url, _ := fakeServer(t, tr, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
					serveFixture(w, strings.Repeat("ab", 32))
				}))
				return url
			},
			want: "is corrupt: its sha256 is " + sum + ", the server announced " + strings.Repeat("ab", 32),
		},
		{
			name: "when the output exists with other content, receive refuses to overwrite it",
			server: func(t *testing.T, tr *testTransfer) string {
				url, _ := startServe(t, tr, "--file="+path, "--expect-sha256="+sum)
				return url
			},
			existing: []byte("an older backup"),
			want:     "refusing to overwrite",
		},
		{
			name: "when the output already holds the snapshot, receive succeeds without writing it again",
			server: func(t *testing.T, tr *testTransfer) string {
				url, _ := startServe(t, tr, "--file="+path, "--expect-sha256="+sum)
				return url
			},
			existing: snapshotData,
		},
		{
			name: "when the server answers 503 at first, receive retries until it serves the snapshot",
			server: func(t *testing.T, tr *testTransfer) string {
				var requests atomic.Int64
				url, _ := fakeServer(t, tr, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
					if requests.Add(1) <= 2 {
						http.Error(w, "not yet", http.StatusServiceUnavailable)
						return
					}
					serveFixture(w, sum)
				}))
				return url
			},
		},
		{
			name: "when nothing listens until the timeout, receive retries, then says it gave up",
			server: func(t *testing.T, _ *testTransfer) string {
				return fmt.Sprintf("https://127.0.0.1:%d%s", testutil.FreePort(t), SnapshotPath)
			},
			timeout: "2s",
			want:    "gave up fetching the snapshot after 2s: failed to reach",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTransfer(t)
			url := tc.server(t, tr)
			client := tr
			if tc.client != nil {
				client = tc.client(t, tr)
			}
			output := filepath.Join(t.TempDir(), "backup.db")
			old := time.Now().Add(-time.Hour).Truncate(time.Second)
			if tc.existing != nil {
				writeFile(t, output, tc.existing)
				if err := os.Chtimes(output, old, old); err != nil {
					t.Fatal(err)
				}
			}
			timeout := cmp.Or(tc.timeout, "15s")
			start := time.Now()
			r := newCommand(t, "receive", "--url="+url, "--transfer-dir="+client.dir, "--output="+output, "--timeout="+timeout).run(t.Context())
			if took := time.Since(start); took > 10*time.Second {
				t.Errorf("receive took %s: it waited for a failure retrying cannot fix", took)
			}
			if _, err := os.Stat(output + ".partial"); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("receive left %s.partial (stat: %v)", output, err)
			}
			if tc.want == "" {
				if got := r.info(t); got != (Info{Revision: revision, Size: int64(len(snapshotData)), SHA256: sum}) {
					t.Errorf("receive reported %+v", got)
				}
				checkFile(t, output, snapshotData)
				if st, err := os.Stat(output); err == nil && tc.existing != nil && !st.ModTime().Equal(old) {
					t.Errorf("receive wrote %s again", output)
				}
				return
			}
			if message := r.failure(t); !strings.Contains(message, tc.want) {
				t.Errorf("receive failed with %q, want %q in it", message, tc.want)
			}
			if tc.existing != nil {
				checkFile(t, output, tc.existing)
			} else if _, err := os.Stat(output); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("receive left %s after failing (stat: %v)", output, err)
			}
		})
	}
}

// checkFile fails unless the file at path holds data.
func checkFile(t *testing.T, path string, data []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(data) {
		t.Errorf("%s holds %d bytes, not the %d expected", path, len(got), len(data))
	}
}
