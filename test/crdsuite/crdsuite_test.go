package crdsuite

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadFile(t *testing.T) {
	const obj = `"apiVersion: example.com/v1\nkind: Widget\n"`
	tests := []struct {
		name    string
		content string
		wantErr string
	}{
		{name: "when every case is complete, it loads", content: "crdName: w\ntests:\n  onCreate:\n  - {name: a, initial: " + obj + ", expectedError: x}\n"},
		{name: "when crdName is missing, it is refused", content: "tests: {}\n", wantErr: "crdName is required"},
		{name: "when a case checks nothing, it is refused", content: "crdName: w\ntests:\n  onCreate:\n  - {name: a, initial: " + obj + "}\n", wantErr: "a case that checks nothing cannot fail"},
		{name: "when two cases share a name, it is refused", content: "crdName: w\ntests:\n  onCreate:\n  - {name: a, initial: " + obj + ", expectedError: x}\n  - {name: a, initial: " + obj + ", expectedError: x}\n", wantErr: "the name is used twice"},
		{name: "when an update case has no updated object, it is refused", content: "crdName: w\ntests:\n  onUpdate:\n  - {name: a, initial: " + obj + ", expectedError: x}\n", wantErr: "updated is required"},
		{name: "when a case has no initial object, it is refused", content: "crdName: w\ntests:\n  onCreate:\n  - {name: a, expectedError: x}\n", wantErr: "initial is required"},
		{name: "when a key is misspelled, it is refused", content: "crdName: w\ntests:\n  onCreate:\n  - {name: a, initial: " + obj + ", expectError: x}\n", wantErr: "unknown field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.testsuite.yaml")
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := LoadFile(path)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("want no error, got %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("want an error containing %q, got %v", tt.wantErr, err)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	suites, err := Load("testdata")
	if err != nil {
		t.Fatal(err)
	}
	if len(suites) != 1 || suites[0].CRDName != "widgets.example.com" {
		t.Fatalf("got %v, want the one suite in testdata", suites)
	}
	if got := len(suites[0].Tests.OnCreate) + len(suites[0].Tests.OnUpdate); got != 2 {
		t.Errorf("got %d cases, want 2", got)
	}
}
