package v1beta1

import (
	"testing"
	"time"
)

// pausedUntilCases are the meanings of pausedUntil, the same on every kind
// that has the field.
var pausedUntilCases = []struct {
	name       string
	value      *string
	wantPaused bool
	wantUntil  time.Time
	wantErr    bool
}{
	{name: "when unset, it is not paused", value: nil},
	{name: "when true, it is paused with no end", value: str("true"), wantPaused: true},
	{name: "when a future time, it is paused until then", value: str("2026-06-02T00:00:00Z"), wantPaused: true, wantUntil: time.Date(2026, 6, 2, 0, 0, 0, 0, time.UTC)},
	{name: "when a time with an offset, it is honoured", value: str("2026-06-01T13:30:00+02:00"), wantPaused: false, wantUntil: time.Date(2026, 6, 1, 11, 30, 0, 0, time.UTC)},
	{name: "when a past time, it is not paused", value: str("2026-05-31T00:00:00Z"), wantUntil: time.Date(2026, 5, 31, 0, 0, 0, 0, time.UTC)},
	{name: "when now exactly, it is no longer paused", value: str("2026-06-01T12:00:00Z"), wantUntil: pausedNow},
	{name: "when false, it is an error", value: str("false"), wantErr: true},
	{name: "when True in another case, it is an error", value: str("True"), wantErr: true},
	{name: "when a date without time, it is an error", value: str("2026-06-02"), wantErr: true},
	{name: "when a day that does not exist, it is an error", value: str("2026-02-30T00:00:00Z"), wantErr: true},
	{name: "when empty, it is an error", value: str(""), wantErr: true},
}

var pausedNow = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

func str(s string) *string { return &s }

func checkPaused(t *testing.T, paused bool, until time.Time, err error, wantPaused bool, wantUntil time.Time, wantErr bool) {
	t.Helper()
	if (err != nil) != wantErr {
		t.Fatalf("error = %v, want error %v", err, wantErr)
	}
	if paused != wantPaused {
		t.Errorf("paused = %v, want %v", paused, wantPaused)
	}
	if !until.Equal(wantUntil) {
		t.Errorf("until = %v, want %v", until, wantUntil)
	}
}

func TestParsePausedUntil(t *testing.T) {
	for _, tt := range pausedUntilCases {
		t.Run(tt.name, func(t *testing.T) {
			paused, until, err := ParsePausedUntil(tt.value, pausedNow)
			checkPaused(t, paused, until, err, tt.wantPaused, tt.wantUntil, tt.wantErr)
		})
	}
}

func TestNodePoolPaused(t *testing.T) {
	for _, tt := range pausedUntilCases {
		t.Run(tt.name, func(t *testing.T) {
			np := &NodePool{Spec: NodePoolSpec{PausedUntil: tt.value}}
			paused, until, err := np.Paused(pausedNow)
			checkPaused(t, paused, until, err, tt.wantPaused, tt.wantUntil, tt.wantErr)
		})
	}
}

func TestControlPlaneNamespace(t *testing.T) {
	tests := []struct {
		name, namespace, cluster, want string
	}{
		{name: "when the name is a label, it joins namespace and name", namespace: "clusters", cluster: "demo", want: "clusters-demo"},
		{name: "when the name has dots, they become dashes", namespace: "clusters", cluster: "a.b.c", want: "clusters-a-b-c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ControlPlaneNamespace(tt.namespace, tt.cluster); got != tt.want {
				t.Errorf("ControlPlaneNamespace(%q, %q) = %q, want %q", tt.namespace, tt.cluster, got, tt.want)
			}
		})
	}
}
