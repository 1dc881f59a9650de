package startup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
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
