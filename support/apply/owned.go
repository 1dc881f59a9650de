package apply

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ownsOnly reports whether the fields owner applied to live (its managedFields
// entry) are all still set by desired. When desired stops setting a field
// the owner once applied, an apply is needed to remove it, even though
// live still contains desired.
func ownsOnly(live metav1.Object, owner string, desired map[string]any) (bool, error) {
	for _, entry := range live.GetManagedFields() {
		if entry.Manager != owner || entry.Operation != metav1.ManagedFieldsOperationApply || entry.Subresource != "" {
			continue
		}
		if entry.FieldsV1 == nil {
			return false, nil
		}
		var fields map[string]any
		if err := json.Unmarshal(entry.FieldsV1.GetRawBytes(), &fields); err != nil {
			return false, fmt.Errorf("failed to decode the managed fields of %s: %w", owner, err)
		}
		return covered(fields, desired), nil
	}
	// Nothing owned yet: apply to take ownership.
	return false, nil
}

// covered walks a fieldsV1 tree ("f:<field>", "k:<list-map key>",
// "v:<set value>", "i:<index>", "." for the node itself) and reports whether
// every path in it exists in value.
func covered(fields map[string]any, value any) bool {
	for key, child := range fields {
		sub, _ := child.(map[string]any)
		var next any
		var ok bool
		switch {
		case key == ".":
			continue
		case strings.HasPrefix(key, "f:"):
			m, isMap := value.(map[string]any)
			if !isMap {
				return false
			}
			next, ok = m[strings.TrimPrefix(key, "f:")]
		case strings.HasPrefix(key, "k:"):
			next, ok = findKeyed(value, strings.TrimPrefix(key, "k:"))
		case strings.HasPrefix(key, "v:"):
			next, ok = findValue(value, strings.TrimPrefix(key, "v:"))
		case strings.HasPrefix(key, "i:"):
			next, ok = findIndex(value, strings.TrimPrefix(key, "i:"))
		default:
			return false
		}
		if !ok {
			return false
		}
		if len(sub) > 0 && !covered(sub, next) {
			return false
		}
	}
	return true
}

// findKeyed finds the element of a list-map whose key fields equal key
// (JSON). A key field desired leaves out matches: the API server filled it
// with its default.
func findKeyed(value any, key string) (any, bool) {
	list, isList := value.([]any)
	var want map[string]any
	if !isList || json.Unmarshal([]byte(key), &want) != nil {
		return nil, false
	}
	for _, item := range list {
		element, isMap := item.(map[string]any)
		if !isMap {
			continue
		}
		match := true
		for field, v := range want {
			have, set := element[field]
			if !set {
				// A key field the API server defaults (a port's protocol).
				continue
			}
			if !Contains(have, v) {
				match = false
				break
			}
		}
		if match {
			return element, true
		}
	}
	return nil, false
}

// findValue finds an element of a set-list equal to raw (JSON).
func findValue(value any, raw string) (any, bool) {
	list, isList := value.([]any)
	var want any
	if !isList || json.Unmarshal([]byte(raw), &want) != nil {
		return nil, false
	}
	for _, item := range list {
		if Contains(item, want) {
			return item, true
		}
	}
	return nil, false
}

func findIndex(value any, raw string) (any, bool) {
	list, isList := value.([]any)
	i, err := strconv.Atoi(raw)
	if !isList || err != nil || i < 0 || i >= len(list) {
		return nil, false
	}
	return list[i], true
}
