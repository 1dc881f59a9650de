package nodeagent

import (
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"
)

func TestRewritePaths(t *testing.T) {
	mounts := []mountPoint{
		{path: "/etc/kubernetes", host: "/state/vol/config"},
		{path: "/etc/kubernetes/tls", host: "/state/vol/tls"},
		{path: "/var/run/secrets/kubernetes.io/serviceaccount", host: "/state/vol/sa"},
		{path: "/", host: "/state/vol/root"},
	}
	for in, want := range map[string]string{
		"--cert=/etc/kubernetes/tls/tls.crt":                          "--cert=/state/vol/tls/tls.crt",
		"--config=/etc/kubernetes/config.yaml":                        "--config=/state/vol/config/config.yaml",
		"/etc/kubernetes":                                             "/state/vol/config",
		"--sni=/etc/kubernetes/tls/a,/etc/kubernetes/tls/b":           "--sni=/state/vol/tls/a,/state/vol/tls/b",
		"cat /etc/kubernetes/x; ls '/etc/kubernetes/tls'":             "cat /state/vol/config/x; ls '/state/vol/tls'",
		"PATH=/bin:/etc/kubernetes/bin":                               "PATH=/bin:/state/vol/config/bin",
		"--token=/var/run/secrets/kubernetes.io/serviceaccount/token": "--token=/state/vol/sa/token",
		"--cert=/etc/kubernetes-other/x":                              "--cert=/etc/kubernetes-other/x",
		"--url=https://host/etc/kubernetes/x":                         "--url=https://host/etc/kubernetes/x",
		"--rel=etc/kubernetes/x":                                      "--rel=etc/kubernetes/x",
		"--bin=/usr/bin/etcd":                                         "--bin=/usr/bin/etcd",
		"plain":                                                       "plain",
	} {
		if got := rewritePaths(in, mounts); got != want {
			t.Errorf("rewritePaths(%q) = %q, want %q", in, got, want)
		}
	}
	// A host path that itself lies under a mount path is not rewritten again.
	nested := []mountPoint{{path: "/tmp", host: "/tmp/state/vol"}}
	if got := rewritePaths("--dir=/tmp/x", nested); got != "--dir=/tmp/state/vol/x" {
		t.Errorf("rewritePaths with a nested host path = %q", got)
	}
}

func TestRewriteListenAddresses(t *testing.T) {
	got := rewriteListenArgs([]string{
		"--bind-address=0.0.0.0", "--listen-client-urls=https://0.0.0.0:2379,http://0.0.0.0:2381",
		"--listen-metrics-urls=http://0.0.0.0:2381", "--peer=http://127.0.0.1:2380", "https://0.0.0.0:1",
	}, "127.1.0.9")
	want := []string{
		"--bind-address=127.1.0.9", "--listen-client-urls=https://127.1.0.9:2379,http://127.1.0.9:2381",
		"--listen-metrics-urls=http://127.1.0.9:2381", "--peer=http://127.0.0.1:2380", "https://0.0.0.0:1",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("rewriteListenArgs = %q, want %q", got, want)
	}
}

func TestWriteAtomically(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "vol")
	files := func(kv ...string) map[string]fileProjection {
		out := map[string]fileProjection{}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = fileProjection{data: []byte(kv[i+1]), mode: 0o640}
		}
		return out
	}
	changed, err := writeAtomically(dir, files("a", "1", "sub/b", "2"))
	if err != nil || !changed {
		t.Fatalf("first write: changed %v, %v", changed, err)
	}
	if changed, err := writeAtomically(dir, files("a", "1", "sub/b", "2")); err != nil || changed {
		t.Errorf("an unchanged payload was written again: changed %v, %v", changed, err)
	}
	if _, err := writeAtomically(dir, files("a", "3")); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "a"))
	if err != nil || string(got) != "3" {
		t.Errorf("a = %q, %v", got, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "sub")); !os.IsNotExist(err) {
		t.Errorf("a name the payload dropped is still there: %v", err)
	}
	info, err := os.Stat(filepath.Join(dir, "a"))
	if err != nil || info.Mode().Perm() != 0o640 {
		t.Errorf("mode of a: %v, %v", info, err)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	if len(names) != 3 || names[1] != "..data" || names[2] != "a" {
		t.Errorf("the volume holds %v, want one version directory, ..data and a", names)
	}
	for _, bad := range []string{"/abs", "../up", "..hidden", "a/../../b"} {
		if _, err := writeAtomically(dir, files(bad, "x")); err == nil {
			t.Errorf("path %q was accepted", bad)
		}
	}
}
