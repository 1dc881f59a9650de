package apivalidation_test

import (
	"strings"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"

	"github.com/hypershift-le/hypershift/api/crds"
)

// TestImmutabilityRulesBehindEnums covers the immutability rules of enum
// fields for values beyond the enum (platform.type, whose suites cover None
// to Pod; etcd.managementType, whose enum has a single value today): the
// API server refuses any other value by the enum before it evaluates the
// rule, so the suites cannot reach the rule. Here the API server's own CEL
// validator evaluates the rules of the generated CRD directly, ready for the
// day a second value is added.
func TestImmutabilityRulesBehindEnums(t *testing.T) {
	validator, schema := celValidator(t, "HostedCluster")
	spec := func(platform, etcd string) map[string]any {
		return map[string]any{
			"apiVersion": "hypershift.openshift.io/v1beta1", "kind": "HostedCluster",
			"metadata": map[string]any{"name": "demo"},
			"spec": map[string]any{
				"release":    map[string]any{"image": "quay.io/ocp/release:4.17.0"},
				"platform":   map[string]any{"type": platform},
				"pullSecret": map[string]any{"name": "pull-secret"},
				"etcd":       map[string]any{"managementType": etcd},
				"services": []any{map[string]any{"service": "APIServer", "servicePublishingStrategy": map[string]any{
					"type": "NodePort", "nodePort": map[string]any{"address": "127.0.0.1"},
				}}},
			},
		}
	}
	tests := []struct {
		name     string
		old, new map[string]any
		wantErr  string
	}{
		{name: "when nothing changes, the rules pass", old: spec("None", "Managed"), new: spec("None", "Managed")},
		{name: "when platform.type changes, it is refused", old: spec("None", "Managed"), new: spec("AWS", "Managed"), wantErr: "spec.platform.type: Invalid value: \"AWS\": platform.type is immutable"},
		{name: "when etcd.managementType changes, it is refused", old: spec("None", "Managed"), new: spec("None", "Unmanaged"), wantErr: "spec.etcd.managementType: Invalid value: \"Unmanaged\": etcd.managementType is immutable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs, _ := validator.Validate(t.Context(), field.NewPath(""), schema, tt.new, tt.old, celconfig.RuntimeCELCostBudget)
			got := errs.ToAggregate()
			switch {
			case tt.wantErr == "" && got != nil:
				t.Fatalf("want no error, got %v", got)
			case tt.wantErr != "" && (got == nil || !strings.Contains(got.Error(), tt.wantErr)):
				t.Fatalf("want an error containing %q, got %v", tt.wantErr, got)
			}
		})
	}
}

// TestNodePoolTransitionRulesOutOfTheSuitesReach covers what the NodePool
// suite cannot reach: platform.type's immutability behind its one-value enum,
// and upgradeType's immutability from InPlace, a value no NodePool can be
// created with today.
func TestNodePoolTransitionRulesOutOfTheSuitesReach(t *testing.T) {
	validator, schema := celValidator(t, "NodePool")
	nodePool := func(platform, upgradeType string) map[string]any {
		return map[string]any{
			"apiVersion": "hypershift.openshift.io/v1beta1", "kind": "NodePool",
			"metadata": map[string]any{"name": "workers"},
			"spec": map[string]any{
				"clusterName": "demo",
				"release":     map[string]any{"image": "quay.io/ocp/release:4.17.0"},
				"platform":    map[string]any{"type": platform},
				"management":  map[string]any{"upgradeType": upgradeType},
			},
		}
	}
	tests := []struct {
		name     string
		old, new map[string]any
		wantErr  string
	}{
		{name: "when nothing changes, the rules pass", old: nodePool("None", "Replace"), new: nodePool("None", "Replace")},
		{name: "when platform.type changes, it is refused", old: nodePool("None", "Replace"), new: nodePool("AWS", "Replace"), wantErr: "spec.platform.type: Invalid value: \"AWS\": platform.type is immutable: create another NodePool"},
		{name: "when upgradeType changes from InPlace to Replace, it is refused", old: nodePool("None", "InPlace"), new: nodePool("None", "Replace"), wantErr: "spec.management.upgradeType: Invalid value: \"Replace\": upgradeType is immutable: create another NodePool"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs, _ := validator.Validate(t.Context(), field.NewPath(""), schema, tt.new, tt.old, celconfig.RuntimeCELCostBudget)
			got := errs.ToAggregate()
			switch {
			case tt.wantErr == "" && got != nil:
				t.Fatalf("want no error, got %v", got)
			case tt.wantErr != "" && (got == nil || !strings.Contains(got.Error(), tt.wantErr)):
				t.Fatalf("want an error containing %q, got %v", tt.wantErr, got)
			}
		})
	}
}

// celValidator returns the API server's CEL validator of the embedded CRD of
// kind, and its structural schema.
func celValidator(t *testing.T, kind string) (*cel.Validator, *structuralschema.Structural) {
	t.Helper()
	list, err := crds.CustomResourceDefinitions()
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range list {
		if crd.Spec.Names.Kind != kind {
			continue
		}
		internal := &apiextensions.JSONSchemaProps{}
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(crd.Spec.Versions[0].Schema.OpenAPIV3Schema, internal, nil); err != nil {
			t.Fatalf("failed to convert the schema: %v", err)
		}
		schema, err := structuralschema.NewStructural(internal)
		if err != nil {
			t.Fatalf("failed to build the structural schema: %v", err)
		}
		return cel.NewValidator(schema, true, celconfig.PerCallLimit), schema
	}
	t.Fatalf("the %s CRD is not embedded", kind)
	return nil, nil
}
