package leasestate

import (
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

var t0 = time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)

// leaseAt is a Lease at resourceVersion rv whose renewTime is an hour
// ahead of the observer's clock: the rule must not care.
func leaseAt(rv string, seconds *int32) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To("a"),
			RenewTime:            ptr.To(metav1.NewMicroTime(t0.Add(time.Hour))),
			LeaseDurationSeconds: seconds,
		},
	}
}

func TestSee(t *testing.T) {
	first, changed := See(nil, leaseAt("1", ptr.To[int32](15)), t0, time.Minute)
	if !changed || !first.At.Equal(t0) || first.Duration != 15*time.Second {
		t.Fatalf("a first sighting: %+v changed=%t", first, changed)
	}
	again, changed := See(&first, leaseAt("1", ptr.To[int32](15)), t0.Add(10*time.Second), time.Minute)
	if changed || again != first {
		t.Errorf("when the resourceVersion is unchanged, the sighting is kept: %+v changed=%t", again, changed)
	}
	next, changed := See(&first, leaseAt("2", ptr.To[int32](15)), t0.Add(10*time.Second), time.Minute)
	if !changed || !next.At.Equal(t0.Add(10*time.Second)) {
		t.Errorf("when the resourceVersion changed, it is seen now: %+v changed=%t", next, changed)
	}
	fallback, _ := See(nil, leaseAt("1", nil), t0, time.Minute)
	if fallback.Duration != time.Minute {
		t.Errorf("when the Lease declares no duration, the fallback counts: %s", fallback.Duration)
	}
}

func TestExpired(t *testing.T) {
	s := Sighting{ResourceVersion: "1", At: t0, Duration: 15 * time.Second}
	for _, tc := range []struct {
		name  string
		after time.Duration
		want  bool
	}{
		{name: "when less than its duration passed since the change was seen, it has not expired, whatever renewTime says", after: 14 * time.Second, want: false},
		{name: "when exactly its duration passed, it has expired", after: 15 * time.Second, want: true},
		{name: "when more passed, it has expired", after: time.Hour, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := s.Expired(t0.Add(tc.after)); got != tc.want {
				t.Errorf("Expired = %t, want %t", got, tc.want)
			}
		})
	}
}

func TestDuration(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lease *coordinationv1.Lease
		want  time.Duration
	}{
		{name: "when the Lease declares a duration, it counts", lease: leaseAt("1", ptr.To[int32](15)), want: 15 * time.Second},
		{name: "when it declares none, the fallback counts", lease: leaseAt("1", nil), want: time.Minute},
		{name: "when it declares zero, the fallback counts", lease: leaseAt("1", ptr.To[int32](0)), want: time.Minute},
		{name: "when there is no Lease, the fallback counts", lease: nil, want: time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Duration(tc.lease, time.Minute); got != tc.want {
				t.Errorf("Duration = %s, want %s", got, tc.want)
			}
		})
	}
}
