// Command crdbounds gives every string and list in the generated CRDs a
// maximum size. Fields of our own types carry their bounds as markers; the
// config.openshift.io/v1 types we embed do not, and an unbounded field lets a
// single object grow without limit and makes CEL rules on or around it too
// costly for the API server to accept. `make generate` runs it after
// controller-gen; the apivalidation tests fail if any field is left unbounded.
//
// Usage: crdbounds FILE...
package main

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

const (
	// defaultMaxLength bounds a free-form string.
	defaultMaxLength = 1024
	// nameMaxLength bounds a string field called "name": an object name.
	nameMaxLength = 253
	// defaultMaxItems bounds a list.
	defaultMaxItems = 64
)

// maxItemsOverrides are lists that legitimately hold more than
// defaultMaxItems entries, by path below openAPIV3Schema.
var maxItemsOverrides = map[string]int64{
	// OpenShift has several hundred feature gates.
	".spec.configuration.featureGate.customNoUpgrade.enabled":  1024,
	".spec.configuration.featureGate.customNoUpgrade.disabled": 1024,
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: crdbounds FILE...")
		os.Exit(2)
	}
	for _, path := range os.Args[1:] {
		if err := boundFile(path); err != nil {
			fmt.Fprintf(os.Stderr, "crdbounds: %s: %v\n", path, err)
			os.Exit(1)
		}
	}
}

func boundFile(path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var crd map[string]any
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		return fmt.Errorf("failed to decode: %w", err)
	}
	spec, _ := crd["spec"].(map[string]any)
	versions, _ := spec["versions"].([]any)
	if len(versions) == 0 {
		return fmt.Errorf("no versions in spec")
	}
	for _, v := range versions {
		version, _ := v.(map[string]any)
		schema, _ := version["schema"].(map[string]any)
		root, ok := schema["openAPIV3Schema"].(map[string]any)
		if !ok {
			return fmt.Errorf("version %v has no openAPIV3Schema", version["name"])
		}
		Bound(root)
	}
	out, err := yaml.Marshal(crd)
	if err != nil {
		return fmt.Errorf("failed to encode: %w", err)
	}
	return os.WriteFile(path, append([]byte("---\n"), out...), 0o644)
}

// Bound sets maxLength on every unbounded string and maxItems on every
// unbounded list of the schema, in place. Strings with an enum or a
// date-time format are bounded already; apiVersion and kind at the root are
// the API server's.
func Bound(root map[string]any) {
	walk(root, "", true)
}

func walk(node map[string]any, path string, isRoot bool) {
	switch node["type"] {
	case "string":
		_, hasMax := node["maxLength"]
		_, hasEnum := node["enum"]
		if !hasMax && !hasEnum && node["format"] != "date-time" {
			limit := int64(defaultMaxLength)
			if strings.HasSuffix(path, ".name") {
				limit = nameMaxLength
			}
			node["maxLength"] = limit
		}
	case "array":
		if _, hasMax := node["maxItems"]; !hasMax {
			limit := int64(defaultMaxItems)
			if override, ok := maxItemsOverrides[path]; ok {
				limit = override
			}
			node["maxItems"] = limit
		}
	}
	if properties, ok := node["properties"].(map[string]any); ok {
		keys := make([]string, 0, len(properties))
		for key := range properties {
			keys = append(keys, key)
		}
		sort.Strings(keys)
		for _, key := range keys {
			if isRoot && (key == "apiVersion" || key == "kind") {
				continue
			}
			if child, ok := properties[key].(map[string]any); ok {
				walk(child, path+"."+key, false)
			}
		}
	}
	if items, ok := node["items"].(map[string]any); ok {
		walk(items, path+"[]", false)
	}
	if additional, ok := node["additionalProperties"].(map[string]any); ok {
		walk(additional, path+"{}", false)
	}
}
