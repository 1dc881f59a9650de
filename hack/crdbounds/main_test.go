package main

import (
	"reflect"
	"testing"
)

func TestBound(t *testing.T) {
	tests := []struct {
		name string
		in   map[string]any
		want map[string]any
	}{
		{
			name: "when a string has no bound, it gets the default, and a name gets an object name's",
			in: object(map[string]any{
				"url":  map[string]any{"type": "string"},
				"name": map[string]any{"type": "string"},
			}),
			want: object(map[string]any{
				"url":  map[string]any{"type": "string", "maxLength": int64(defaultMaxLength)},
				"name": map[string]any{"type": "string", "maxLength": int64(nameMaxLength)},
			}),
		},
		{
			name: "when a field is bounded already, an enum or a date-time, it is left alone",
			in: object(map[string]any{
				"a": map[string]any{"type": "string", "maxLength": int64(5)},
				"b": map[string]any{"type": "string", "enum": []any{"x"}},
				"c": map[string]any{"type": "string", "format": "date-time"},
				"d": map[string]any{"type": "array", "maxItems": int64(3), "items": map[string]any{"type": "integer"}},
			}),
			want: object(map[string]any{
				"a": map[string]any{"type": "string", "maxLength": int64(5)},
				"b": map[string]any{"type": "string", "enum": []any{"x"}},
				"c": map[string]any{"type": "string", "format": "date-time"},
				"d": map[string]any{"type": "array", "maxItems": int64(3), "items": map[string]any{"type": "integer"}},
			}),
		},
		{
			name: "when a list has no bound, it and its strings get one, and overrides win",
			in: object(map[string]any{
				"spec": object(map[string]any{"configuration": object(map[string]any{"featureGate": object(map[string]any{"customNoUpgrade": object(map[string]any{
					"enabled": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
				})})})}),
				"tags": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
			}),
			want: object(map[string]any{
				"spec": object(map[string]any{"configuration": object(map[string]any{"featureGate": object(map[string]any{"customNoUpgrade": object(map[string]any{
					"enabled": map[string]any{"type": "array", "maxItems": int64(1024), "items": map[string]any{"type": "string", "maxLength": int64(defaultMaxLength)}},
				})})})}),
				"tags": map[string]any{"type": "array", "maxItems": int64(defaultMaxItems), "items": map[string]any{"type": "string", "maxLength": int64(defaultMaxLength)}},
			}),
		},
		{
			name: "when apiVersion and kind are at the root, they are left to the API server",
			in: object(map[string]any{
				"apiVersion": map[string]any{"type": "string"},
				"kind":       map[string]any{"type": "string"},
			}),
			want: object(map[string]any{
				"apiVersion": map[string]any{"type": "string"},
				"kind":       map[string]any{"type": "string"},
			}),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			Bound(tt.in)
			if !reflect.DeepEqual(tt.in, tt.want) {
				t.Errorf("got %v\nwant %v", tt.in, tt.want)
			}
		})
	}
}

func object(properties map[string]any) map[string]any {
	return map[string]any{"type": "object", "properties": properties}
}
