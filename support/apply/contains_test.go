package apply

import (
	"encoding/json"
	"testing"
)

func TestContains(t *testing.T) {
	tests := []struct {
		name       string
		live, want any
		expected   bool
	}{
		{name: "when live has every wanted field and more, it contains want", live: map[string]any{"a": "x", "b": int64(1), "extra": true}, want: map[string]any{"a": "x", "b": float64(1)}, expected: true},
		{name: "when a wanted scalar differs, it does not", live: map[string]any{"a": "x"}, want: map[string]any{"a": "y"}, expected: false},
		{name: "when a wanted field is missing, it does not", live: map[string]any{}, want: map[string]any{"a": "y"}, expected: false},
		{name: "when a wanted field is empty and missing, it does", live: map[string]any{}, want: map[string]any{"a": map[string]any{}, "b": []any{}, "c": nil}, expected: true},
		{name: "when list elements carry server defaults, it does", live: map[string]any{"l": []any{map[string]any{"name": "a", "default": "d"}}}, want: map[string]any{"l": []any{map[string]any{"name": "a"}}}, expected: true},
		{name: "when a list has another length, it does not", live: map[string]any{"l": []any{"a", "b"}}, want: map[string]any{"l": []any{"a"}}, expected: false},
		{name: "when list order differs, it does not", live: []any{"b", "a"}, want: []any{"a", "b"}, expected: false},
		{name: "when a number has another type but the same value, it does", live: int64(3), want: float64(3), expected: true},
		{name: "when a number is a string in live, it does not", live: "3", want: int64(3), expected: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Contains(tt.live, tt.want); got != tt.expected {
				t.Errorf("Contains(%v, %v) = %v, want %v", tt.live, tt.want, got, tt.expected)
			}
		})
	}
}

func TestCovered(t *testing.T) {
	desired := map[string]any{
		"metadata": map[string]any{"name": "x", "labels": map[string]any{"a": "1"}},
		"spec": map[string]any{
			"containers": []any{map[string]any{"name": "c", "ports": []any{map[string]any{"containerPort": int64(80)}}}},
			"finalizers": []any{"a"},
		},
	}
	tests := []struct {
		name   string
		fields string
		want   bool
	}{
		{name: "when every owned path is desired, it is covered", fields: `{"f:metadata":{"f:labels":{"f:a":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"c\"}":{".":{},"f:name":{},"f:ports":{"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{}}}}},"f:finalizers":{"v:\"a\"":{}}}}`, want: true},
		{name: "when an owned label is no longer desired, it is not", fields: `{"f:metadata":{"f:labels":{"f:a":{},"f:b":{}}}}`, want: false},
		{name: "when an owned list element is no longer desired, it is not", fields: `{"f:spec":{"f:containers":{"k:{\"name\":\"old\"}":{}}}}`, want: false},
		{name: "when an owned set value is no longer desired, it is not", fields: `{"f:spec":{"f:finalizers":{"v:\"b\"":{}}}}`, want: false},
		{name: "when a key field differs, it is not", fields: `{"f:spec":{"f:containers":{"k:{\"name\":\"c\"}":{"f:ports":{"k:{\"containerPort\":81}":{}}}}}}`, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var fields map[string]any
			if err := json.Unmarshal([]byte(tt.fields), &fields); err != nil {
				t.Fatal(err)
			}
			if got := covered(fields, desired); got != tt.want {
				t.Errorf("covered = %v, want %v", got, tt.want)
			}
		})
	}
}
