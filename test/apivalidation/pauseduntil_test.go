package apivalidation_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/hypershift-le/hypershift/api/crds"
	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
)

// TestPausedUntilHasOneValidation walks the embedded CRDs: every kind's
// spec.pausedUntil (HostedCluster, HostedControlPlane, NodePool) has one
// meaning, which ParsePausedUntil reads, so its schema and rule must be the
// same everywhere and accept the date-times of PausedUntilPattern. The
// markers are written once per type; this catches the copy that drifts.
func TestPausedUntilHasOneValidation(t *testing.T) {
	list, err := crds.CustomResourceDefinitions()
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]apiextensionsv1.JSONSchemaProps{}
	for _, crd := range list {
		walkSchema(crd.Spec.Versions[0].Schema.OpenAPIV3Schema, "", func(path string, s *apiextensionsv1.JSONSchemaProps) {
			if strings.HasSuffix(path, ".pausedUntil") {
				found[crd.Spec.Names.Kind+path] = *s
			}
		})
	}
	for _, want := range []string{"HostedCluster.spec.pausedUntil", "HostedControlPlane.spec.pausedUntil", "NodePool.spec.pausedUntil"} {
		if _, ok := found[want]; !ok {
			t.Errorf("%s is not in the embedded CRDs", want)
		}
	}

	dateTime := strings.TrimSuffix(strings.TrimPrefix(hyperv1.PausedUntilPattern, "^(true|"), ")$")
	reference := found["HostedCluster.spec.pausedUntil"]
	if len(reference.XValidations) != 1 || !strings.Contains(reference.XValidations[0].Rule, "self.matches('^"+dateTime+"$')") {
		t.Errorf("HostedCluster's pausedUntil rule does not match the date-times of PausedUntilPattern:\n%v", reference.XValidations)
	}
	keys := make([]string, 0, len(found))
	for key := range found {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	for _, key := range keys {
		got := found[key]
		if got.Type != reference.Type || !cmp.Equal(got.MaxLength, reference.MaxLength) {
			t.Errorf("%s is a %s of at most %v characters, want a %s of at most %v as HostedCluster's", key, got.Type, deref(got.MaxLength), reference.Type, deref(reference.MaxLength))
		}
		if diff := cmp.Diff(reference.XValidations, got.XValidations); diff != "" {
			t.Errorf("%s's rules differ from HostedCluster's (-HostedCluster +%s):\n%s", key, key, diff)
		}
	}
}

func deref(p *int64) any {
	if p == nil {
		return "unbounded"
	}
	return *p
}
