package auditlogs

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hypershift-le/hypershift/support/testutil"
)

// TestFollowCopiesEveryLineOnceAcrossRotations writes a log the way the
// kube-apiserver's rotation does (renamed aside, a new file in its place)
// and as a truncation would, with a line written in two parts, and checks
// that every whole line is copied exactly once, in order.
func TestFollowCopiesEveryLineOnceAcrossRotations(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	out := &syncBuffer{}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	// The file does not exist yet: it is waited for.
	go func() { done <- Follow(ctx, path, out, 5*time.Millisecond) }()

	var want bytes.Buffer
	line := func(n int) string { return fmt.Sprintf(`{"auditID":"%d"}`+"\n", n) }
	appendTo := func(s string) {
		t.Helper()
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	shown := func() {
		t.Helper()
		testutil.Eventually(t, 5*time.Second, func() error {
			if out.String() != want.String() {
				return fmt.Errorf("copied %q, want %q", out.String(), want.String())
			}
			return nil
		})
	}

	time.Sleep(20 * time.Millisecond)
	for n := range 3 {
		appendTo(line(n))
		want.WriteString(line(n))
	}
	shown()

	// A line written in two parts is copied once it ends.
	appendTo(`{"auditID":"half`)
	time.Sleep(30 * time.Millisecond)
	if out.String() != want.String() {
		t.Fatalf("an unended line was copied: %q", out.String())
	}
	appendTo("\"}\n")
	want.WriteString(`{"auditID":"half"}` + "\n")
	shown()

	// Rotation: a last line into the old file, renamed aside, then the
	// new file.
	appendTo(line(3))
	want.WriteString(line(3))
	if err := os.Rename(path, filepath.Join(dir, "audit-2026-01-01T00-00-00.000.log")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	for n := 4; n < 6; n++ {
		appendTo(line(n))
		want.WriteString(line(n))
	}
	shown()

	// Truncation: the file starts again.
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	appendTo(line(6))
	want.WriteString(line(6))
	shown()

	// What is written just before the end is still copied.
	appendTo(line(7))
	want.WriteString(line(7))
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if out.String() != want.String() {
		t.Fatalf("after the end, copied %q, want %q", out.String(), want.String())
	}
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestCommandCopiesTheFileItIsGiven: `audit-logs --path` copies that file
// to its output, and ends without error when its context does.
func TestCommandCopiesTheFileItIsGiven(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte("{\"auditID\":\"a\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := NewCommand()
	out := &syncBuffer{}
	cmd.SetOut(out)
	cmd.SetArgs([]string{"--path=" + path, "--poll-interval=10ms"})
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if err := cmd.ExecuteContext(ctx); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "{\"auditID\":\"a\"}\n" {
		t.Fatalf("copied %q", got)
	}
}
