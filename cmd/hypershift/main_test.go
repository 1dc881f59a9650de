package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/hypershift-le/hypershift/test/testenv"
)

var binary string

// TestMain builds the CLI, so exit codes and stderr are the real ones.
func TestMain(m *testing.M) {
	var cleanup func()
	var err error
	binary, cleanup, err = testenv.BuildBinary("github.com/hypershift-le/hypershift/cmd/hypershift")
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %v\n", err)
		os.Exit(1)
	}
	code := m.Run()
	cleanup()
	os.Exit(code)
}

func TestCommandErrors(t *testing.T) {
	dir := t.TempDir()
	unreachable := filepath.Join(dir, "kubeconfig")
	raw := "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\nusers: [{name: u, user: {token: x}}]\n"
	if err := os.WriteFile(unreachable, []byte(raw), 0o600); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(dir, "pull-secret.json")
	if err := os.WriteFile(secret, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "when a flag is unknown", args: []string{"install", "--frobnicate"}, want: "unknown flag: --frobnicate"},
		{name: "when a command is unknown", args: []string{"instal"}, want: `unknown command "instal"`},
		{name: "when the name is missing", args: []string{"create", "cluster", "none", "--release-image=quay.io/x/y:1", "--pull-secret=" + secret}, want: `a HostedCluster name is required: hypershift create cluster none NAME (or --name=NAME)`},
		{name: "when the NodePool's name is missing", args: []string{"create", "nodepool", "none", "--cluster-name=demo"}, want: `a NodePool name is required: hypershift create nodepool none NAME (or --name=NAME)`},
		{name: "when a required flag is missing", args: []string{"create", "cluster", "none", "demo", "--pull-secret=" + secret}, want: `required flag(s) "release-image" not set`},
		{name: "when the name is given twice, differently", args: []string{"destroy", "cluster", "demo", "--name=other"}, want: `the name is given twice, as "demo" and as --name="other": give one`},
		{name: "when the API server is down (version)", args: []string{"version", "--kubeconfig=" + unreachable, "--request-timeout=2s"}, want: "cannot reach the API server at https://127.0.0.1:1"},
		{name: "when a value is invalid", args: []string{"install", "render", "--image-pull-policy=Sometimes"}, want: `invalid --image-pull-policy "Sometimes"`},
		{name: "when a duration does not parse", args: []string{"install", "--timeout=soon"}, want: `invalid argument "soon" for "--timeout"`},
		{name: "when an output format is unknown", args: []string{"get", "leaders", "-o", "xml"}, want: `unsupported output format "xml"`},
		{name: "when the timings break the invariant", args: []string{"install", "render", "--leader-elect-renew-deadline=2m"}, want: "lease duration (1m0s) must exceed the renew deadline (2m0s)"},
		{name: "when the API server is down (install)", args: []string{"install", "--kubeconfig=" + unreachable, "--request-timeout=2s"}, want: "cannot reach the API server at https://127.0.0.1:1"},
		{name: "when the API server is down (get leaders)", args: []string{"get", "leaders", "--kubeconfig=" + unreachable, "--request-timeout=2s"}, want: "cannot reach the API server at https://127.0.0.1:1"},
		{name: "when the API server is down (create kubeconfig)", args: []string{"create", "kubeconfig", "--kubeconfig=" + unreachable, "--request-timeout=2s"}, want: "cannot reach the API server at https://127.0.0.1:1"},
		{name: "when the API server is down (destroy)", args: []string{"destroy", "cluster", "x", "--kubeconfig=" + unreachable, "--request-timeout=2s"}, want: "cannot reach the API server at https://127.0.0.1:1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			cmd := exec.CommandContext(t.Context(), binary, tt.args...)
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() == 0 {
				t.Fatalf("want a non-zero exit, got %v", err)
			}
			lines := strings.Split(strings.TrimRight(stderr.String(), "\n"), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "error: ") || !strings.Contains(lines[0], tt.want) {
				t.Fatalf("stderr must be one line starting with \"error: \" and containing %q, got:\n%s", tt.want, stderr.String())
			}
			if stdout.Len() != 0 && !strings.HasPrefix(stdout.String(), "Client: ") {
				t.Errorf("stdout is not empty:\n%s", stdout.String())
			}
		})
	}
}

// TestEveryCommandHasAnExample walks the command tree.
func TestEveryCommandHasAnExample(t *testing.T) {
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Example == "" && c.Name() != "help" && c.Name() != "completion" && !strings.HasPrefix(c.CommandPath(), "hypershift completion") {
			t.Errorf("%q has no example in its --help", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCommand())
}

func TestVersion(t *testing.T) {
	out, err := exec.CommandContext(t.Context(), binary, "version", "--client").Output()
	if err != nil || !strings.HasPrefix(string(out), "Client: ") || !strings.Contains(string(out), "commit") {
		t.Fatalf("version --client: %v, %q", err, out)
	}
	out, err = exec.CommandContext(t.Context(), binary, "--version").Output()
	if err != nil || !strings.HasPrefix(string(out), "hypershift version ") || !strings.Contains(string(out), "commit") {
		t.Fatalf("--version: %v, %q", err, out)
	}
}

// TestCompletion: the shell completion of flag values that need no
// cluster (get leaders -o).
func TestCompletion(t *testing.T) {
	out, err := exec.CommandContext(t.Context(), binary, "__complete", "get", "leaders", "-o", "").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"table\n", "wide\n", "json\n", "yaml\n", "jsonpath=\n"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("completion of -o lacks %q:\n%s", want, out)
		}
	}
}

// TestInterruptExits130: Ctrl-C (SIGINT) while a command waits on the API
// server ends it with status 130, as a shell reports a command ended by
// SIGINT, and one line on stderr.
func TestInterruptExits130(t *testing.T) {
	// An API server that accepts connections and never answers.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = conn.Close() })
		}
	}()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	raw := "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://" + l.Addr().String() + "', insecure-skip-tls-verify: true}}]\n" +
		"contexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\nusers: [{name: u, user: {token: x}}]\n"
	if err := os.WriteFile(kubeconfig, []byte(raw), 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(t.Context(), binary, "destroy", "cluster", "--name=x", "--kubeconfig="+kubeconfig, "--request-timeout=2m")
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 130 {
			t.Fatalf("exit %v, want status 130; stderr:\n%s", err, stderr.String())
		}
		if got := strings.TrimSpace(stderr.String()); got != "interrupted" {
			t.Errorf("stderr %q, want \"interrupted\"", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the command did not end within 10s of SIGINT")
	}
}
