package main

import (
	"maps"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
)

// TestTimelineMarkdown orders steps by their median over the clusters,
// ties by name, and reports each step's median, fastest and slowest.
func TestTimelineMarkdown(t *testing.T) {
	got := timelineMarkdown([]timeline{
		{"etcd: pod Ready": 6 * time.Second, "b": time.Second, "a": time.Second, servedStep: 10 * time.Second},
		{"etcd: pod Ready": 8 * time.Second, "b": time.Second, "a": time.Second, servedStep: 12 * time.Second},
		{"etcd: pod Ready": 7 * time.Second, "b": time.Second, "a": time.Second},
	})
	want := []string{
		"| a | 1.00 s | 1.00 s | 1.00 s | 3 |",
		"| b | 1.00 s | 1.00 s | 1.00 s | 3 |",
		"| etcd: pod Ready | 7.00 s | 6.00 s | 8.00 s | 3 |",
		"| " + servedStep + " | 10.00 s | 10.00 s | 12.00 s | 2 |",
	}
	lines := strings.Split(strings.TrimSpace(got), "\n")[2:]
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("timelineMarkdown:\n%s\nwant rows:\n%s", got, strings.Join(want, "\n"))
	}
}

// TestCPOReadSteps marks the control-plane-operator's first list (past its
// elector's list of its Lease), its first pull-secret read and its first
// other Secret read, each once.
func TestCPOReadSteps(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	read := func(verb, resource, name string, after time.Duration) auditv1.Event {
		return auditv1.Event{Verb: verb, ObjectRef: &auditv1.ObjectReference{Resource: resource, Name: name},
			StageTimestamp: metav1.NewMicroTime(base.Add(after))}
	}
	got := map[string]time.Duration{}
	mark := func(step string, at time.Time) {
		if _, ok := got[step]; !ok {
			got[step] = at.Sub(base)
		}
	}
	for _, e := range []auditv1.Event{
		read("list", "leases", "", 0),
		read("list", "secrets", "", 1*time.Second),
		read("list", "services", "", 2*time.Second),
		read("get", "secrets", hyperv1.PullSecretName, 3*time.Second),
		read("get", "secrets", "root-ca", 4*time.Second),
		read("get", "secrets", hyperv1.PullSecretName, 5*time.Second),
		read("get", "services", "etcd-client", 6*time.Second),
	} {
		cpoReadSteps(e, mark)
	}
	want := map[string]time.Duration{
		"control-plane-operator: caches start (first list)":                         time.Second,
		"control-plane-operator: pull secret read (release phase)":                  3 * time.Second,
		"control-plane-operator: PKI Secrets confirmed past the cache (first read)": 4 * time.Second,
	}
	if !maps.Equal(got, want) {
		t.Errorf("cpoReadSteps marked %v, want %v", got, want)
	}
}
