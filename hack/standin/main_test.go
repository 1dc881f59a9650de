package main

import (
	"bytes"
	"crypto/tls"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestParseArgs(t *testing.T) {
	serve, original, err := parseArgs([]string{"--serve=https://127.0.0.1:1", "--verbose", "--serve", "http://:2", "--", "--serve=ignored", "--secure-port=6443"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"https://127.0.0.1:1", "http://:2"}; !reflect.DeepEqual(serve, want) {
		t.Errorf("serve = %q, want %q", serve, want)
	}
	if want := []string{"--serve=ignored", "--secure-port=6443"}; !reflect.DeepEqual(original, want) {
		t.Errorf("original args = %q, want %q", original, want)
	}
	if _, _, err := parseArgs([]string{"--serve"}); err == nil {
		t.Error("when --serve has no value, parsing should fail")
	}
}

func TestServesOKOverHTTPSAndHTTP(t *testing.T) {
	var log bytes.Buffer
	s, err := start([]string{"--serve=https://127.0.0.1:0", "--serve=http://127.0.0.1:0", "--", "--etcd-servers=https://etcd:2379", "two words"}, &log)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	}()
	client := &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // a self-signed certificate
	}
	for _, url := range []string{"https://" + s.addrs[0] + "/readyz", "http://" + s.addrs[1] + "/health"} {
		resp, err := client.Get(url)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(body) != "ok" {
			t.Errorf("GET %s = %d %q, want 200 \"ok\"", url, resp.StatusCode, body)
		}
	}
	if want := `original args: "--etcd-servers=https://etcd:2379" "two words"`; !strings.Contains(log.String(), want) {
		t.Errorf("the log does not hold %q:\n%s", want, log.String())
	}
}

func TestRejectsABadServeAddress(t *testing.T) {
	for _, arg := range []string{"--serve=ftp://127.0.0.1:0", "--serve=127.0.0.1:0"} {
		if s, err := start([]string{arg}, io.Discard); err == nil {
			_ = s.stop()
			t.Errorf("start(%s) should fail", arg)
		}
	}
}

// TestExitsZeroOnSIGTERM builds the command and checks it stops promptly,
// with code 0, when terminated.
func TestExitsZeroOnSIGTERM(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "standin")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	logPath := filepath.Join(dir, "standin.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = logFile.Close() }()
	cmd := exec.Command(bin, "--serve=https://127.0.0.1:0", "--", "--secure-port=6443")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	readLog := func() string { raw, _ := os.ReadFile(logPath); return string(raw) }
	// Terminate it once it serves, so that its signal handler is in place.
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(readLog(), "serving") {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("it did not start serving within 10s; log:\n%s", readLog())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("on SIGTERM it should exit 0, got %v; log:\n%s", err, readLog())
		}
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("it did not exit within 5s of SIGTERM")
	}
}
