// Package leasestate is what a leader-election Lease says of its holder,
// and the one rule by which the project judges that a holder's term ran
// out.
//
// The rule is client-go's follower rule: a Lease expires its lease
// duration after its observer last saw it change (a new resourceVersion),
// counted on the observer's own clock. It never compares spec.renewTime
// plus the duration with the observer's clock: renewTime is written on the
// holder's clock, and a holder whose clock is an hour behind would look
// expired while it renews, one an hour ahead alive long after it stopped.
// An observer that has seen a Lease only once therefore cannot call it
// expired before one lease duration from then; waiting longer is always
// safe.
//
// The elector's followers (support/leaderelection), the hypershift-
// operator's lease clock (status and teardown) and `hypershift get
// leaders` judge by it.
package leasestate

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/utils/ptr"
)

// Holder is the Lease's holderIdentity: "" for a nil Lease, a Lease
// without a holder, or a released one.
func Holder(lease *coordinationv1.Lease) string {
	if lease == nil {
		return ""
	}
	return ptr.Deref(lease.Spec.HolderIdentity, "")
}

// Duration is the lease duration the Lease declares, or fallback when it
// declares none (or a non-positive one).
func Duration(lease *coordinationv1.Lease, fallback time.Duration) time.Duration {
	if lease != nil {
		if s := ptr.Deref(lease.Spec.LeaseDurationSeconds, 0); s > 0 {
			return time.Duration(s) * time.Second
		}
	}
	return fallback
}

// Sighting is one Lease version as an observer saw it: its resourceVersion,
// when on the observer's clock the observer first saw that version, and
// the lease duration it declared.
type Sighting struct {
	ResourceVersion string
	At              time.Time
	Duration        time.Duration
}

// See returns the sighting of lease seen at now by an observer whose last
// sighting of it was last (nil: none): last itself while the
// resourceVersion is unchanged, a new sighting at now otherwise. changed
// reports which.
func See(last *Sighting, lease *coordinationv1.Lease, now time.Time, fallback time.Duration) (s Sighting, changed bool) {
	if last != nil && last.ResourceVersion == lease.ResourceVersion {
		return *last, false
	}
	return Sighting{ResourceVersion: lease.ResourceVersion, At: now, Duration: Duration(lease, fallback)}, true
}

// Expiry is when the sighted version expires if no change follows it.
func (s Sighting) Expiry() time.Time {
	return s.At.Add(s.Duration)
}

// Expired reports whether the sighted version has gone its lease duration
// without a change by now, on the clock it was seen by.
func (s Sighting) Expired(now time.Time) bool {
	return !now.Before(s.Expiry())
}
