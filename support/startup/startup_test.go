package startup

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

func TestLoadConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	raw := "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:6443'}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\nusers: [{name: u, user: {token: x}}]\n"
	if err := os.WriteFile(path, []byte(raw), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(path)
	if err != nil || cfg.Host != "https://127.0.0.1:6443" {
		t.Fatalf("LoadConfig(%s) = %v, %v", path, cfg, err)
	}
	if cfg.QPS >= 0 {
		t.Errorf("QPS %v: a --kubeconfig must not bring back client-go's default rate limit", cfg.QPS)
	}
	if _, err := LoadConfig(filepath.Join(t.TempDir(), "missing")); err == nil || !strings.Contains(err.Error(), "failed to load kubeconfig") {
		t.Fatalf("a missing file: %v", err)
	}
}

func TestLoggingFlags(t *testing.T) {
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	opts := LoggingFlags(fs)
	if err := fs.Parse([]string{"--zap-devel=true"}); err != nil {
		t.Fatal(err)
	}
	if !opts.Development {
		t.Fatal("--zap-devel did not reach the options")
	}
}

// TestLogTimestampsHaveMilliseconds: a log line's timestamp is RFC 3339
// with milliseconds, not whole seconds.
func TestLogTimestampsHaveMilliseconds(t *testing.T) {
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	opts := LoggingFlags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	opts.DestWriter = &buf
	zap.New(zap.UseFlagOptions(opts)).Info("hello")
	var line struct {
		TS string `json:"ts"`
	}
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("not a JSON log line: %q", buf.String())
	}
	if _, err := time.Parse(TimeLayout, line.TS); err != nil || !regexp.MustCompile(`T\d\d:\d\d:\d\d\.\d{3}`).MatchString(line.TS) {
		t.Errorf("timestamp %q is not RFC 3339 with milliseconds (%v)", line.TS, err)
	}
}
