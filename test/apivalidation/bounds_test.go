package apivalidation_test

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/hypershift-le/hypershift/api/crds"
)

// TestEveryStringAndListIsBounded walks the embedded CRDs: an unbounded
// string or list lets one object grow without limit and makes CEL rules
// around it too costly for the API server.
func TestEveryStringAndListIsBounded(t *testing.T) {
	list, err := crds.CustomResourceDefinitions()
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range list {
		for _, version := range crd.Spec.Versions {
			var unbounded []string
			walkSchema(version.Schema.OpenAPIV3Schema, "", func(path string, s *apiextensionsv1.JSONSchemaProps) {
				switch {
				case path == ".apiVersion" || path == ".kind":
				case s.Type == "string" && s.MaxLength == nil && len(s.Enum) == 0 && s.Format != "date-time":
					unbounded = append(unbounded, path+" (string)")
				case s.Type == "array" && s.MaxItems == nil:
					unbounded = append(unbounded, path+" (list)")
				}
			})
			if len(unbounded) > 0 {
				t.Errorf("%s %s has unbounded fields (add a marker, or a bound in hack/crdbounds):\n%v", crd.Name, version.Name, unbounded)
			}
		}
	}
}

func walkSchema(s *apiextensionsv1.JSONSchemaProps, path string, visit func(string, *apiextensionsv1.JSONSchemaProps)) {
	if s == nil {
		return
	}
	visit(path, s)
	for name, child := range s.Properties {
		walkSchema(&child, path+"."+name, visit)
	}
	if s.Items != nil {
		walkSchema(s.Items.Schema, path+"[]", visit)
	}
	if s.AdditionalProperties != nil {
		walkSchema(s.AdditionalProperties.Schema, path+"{}", visit)
	}
}
