package crdsuite

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// Runner runs suites against one API server.
type Runner struct {
	// Client writes the objects; it must be allowed to create namespaces.
	Client client.Client
	// Namespace returns a fresh namespace for one case.
	Namespace func(t testing.TB) string
}

// Run runs every case of the suite as a subtest.
func (r Runner) Run(t *testing.T, s Suite) {
	t.Helper()
	for _, c := range s.Tests.OnCreate {
		t.Run("onCreate/"+c.Name, func(t *testing.T) { r.runCreate(t, c) })
	}
	for _, c := range s.Tests.OnUpdate {
		t.Run("onUpdate/"+c.Name, func(t *testing.T) { r.runUpdate(t, c) })
	}
}

func (r Runner) runCreate(t *testing.T, c OnCreate) {
	ctx := t.Context()
	obj := r.decode(t, c.Initial)
	r.place(t, obj)
	err := r.create(ctx, obj)
	if !checkError(t, "create", err, c.ExpectedError) {
		return
	}
	r.compare(t, obj, c.Expected)
}

func (r Runner) runUpdate(t *testing.T, c OnUpdate) {
	ctx := t.Context()
	obj := r.decode(t, c.Initial)
	r.place(t, obj)
	if err := r.create(ctx, obj); err != nil {
		t.Fatalf("failed to create the initial object: %v", err)
	}

	updated := r.decode(t, c.Updated)
	current := r.get(t, obj)
	updated.SetName(current.GetName())
	updated.SetNamespace(current.GetNamespace())
	updated.SetResourceVersion(current.GetResourceVersion())
	status, hasStatus := updated.Object["status"]
	err := r.Client.Update(ctx, updated)
	if !checkError(t, "update", err, c.ExpectedError) {
		return
	}
	if hasStatus {
		current = r.get(t, obj)
		current.Object["status"] = status
		err := r.Client.Status().Update(ctx, current)
		if !checkError(t, "status update", err, c.ExpectedStatusError) {
			return
		}
	} else if c.ExpectedStatusError != "" {
		t.Fatalf("expectedStatusError is set but updated has no status to write")
	}
	r.compare(t, obj, c.Expected)
}

// create creates obj and then, if it carries a status, writes that status.
func (r Runner) create(ctx context.Context, obj *unstructured.Unstructured) error {
	status, hasStatus := obj.Object["status"]
	if err := r.Client.Create(ctx, obj); err != nil {
		return err
	}
	if !hasStatus {
		return nil
	}
	obj.Object["status"] = status
	return r.Client.Status().Update(ctx, obj)
}

// place puts obj in the case's namespace and gives it a name when it has none.
func (r Runner) place(t *testing.T, obj *unstructured.Unstructured) {
	t.Helper()
	if obj.GetName() == "" {
		obj.SetGenerateName("test-")
	}
	if obj.GetNamespace() == "" {
		obj.SetNamespace(r.Namespace(t))
		return
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: obj.GetNamespace()}}
	if err := r.Client.Create(t.Context(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("failed to create namespace %s: %v", ns.Name, err)
	}
}

func (r Runner) decode(t *testing.T, raw string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(raw), &obj.Object); err != nil {
		t.Fatalf("failed to decode object: %v\n%s", err, raw)
	}
	if obj.GetKind() == "" || obj.GetAPIVersion() == "" {
		t.Fatalf("object has no apiVersion or kind:\n%s", raw)
	}
	return obj
}

func (r Runner) get(t *testing.T, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	current := &unstructured.Unstructured{}
	current.SetGroupVersionKind(obj.GroupVersionKind())
	if err := r.Client.Get(t.Context(), client.ObjectKeyFromObject(obj), current); err != nil {
		t.Fatalf("failed to read back %s: %v", obj.GetName(), err)
	}
	return current
}

// compare checks that every top-level field of expected other than
// apiVersion, kind and metadata equals the stored object's.
func (r Runner) compare(t *testing.T, obj *unstructured.Unstructured, expectedYAML string) {
	t.Helper()
	if expectedYAML == "" {
		return
	}
	expected := r.decode(t, expectedYAML)
	actual := r.get(t, obj)
	for key, want := range expected.Object {
		switch key {
		case "apiVersion", "kind", "metadata":
			continue
		}
		if diff := cmp.Diff(normalize(t, want), normalize(t, actual.Object[key])); diff != "" {
			t.Errorf("stored %s differs from expected (-expected +stored):\n%s", key, diff)
		}
	}
}

// normalize round-trips v through JSON so that numbers compare equal
// whether they were decoded from YAML (float64) or read from the API (int64).
func normalize(t *testing.T, v any) any {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("failed to encode %v: %v", v, err)
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("failed to decode %s: %v", raw, err)
	}
	return out
}

// checkError reports whether the case should go on: it fails the test when
// err does not match expected ("" expects success), and stops the case
// after an expected error.
func checkError(t *testing.T, op string, err error, expected string) bool {
	t.Helper()
	switch {
	case expected == "" && err != nil:
		t.Fatalf("%s failed: %v", op, err)
	case expected != "" && err == nil:
		t.Fatalf("%s succeeded, want an error containing %q", op, expected)
	case expected != "" && !strings.Contains(err.Error(), expected):
		t.Fatalf("%s failed with %q, want an error containing %q", op, err.Error(), expected)
	case expected != "":
		return false
	}
	return true
}

// String describes a suite for logs.
func (s Suite) String() string { return fmt.Sprintf("%s (%s)", s.Path, s.CRDName) }
