package v1beta1

import (
	"fmt"
	"regexp"
	"time"
)

var pausedUntilRE = regexp.MustCompile(PausedUntilPattern)

// ParsePausedUntil interprets a pausedUntil value. It returns paused=false for
// nil. For "true" it returns paused=true and a zero until: paused until the
// field is removed. For a date-time it returns whether now is before it, and
// the time.
func ParsePausedUntil(value *string, now time.Time) (paused bool, until time.Time, err error) {
	if value == nil {
		return false, time.Time{}, nil
	}
	if *value == "true" {
		return true, time.Time{}, nil
	}
	if !pausedUntilRE.MatchString(*value) {
		return false, time.Time{}, fmt.Errorf("pausedUntil %q is neither an RFC3339 date-time nor \"true\"", *value)
	}
	until, err = time.Parse(time.RFC3339, *value)
	if err != nil {
		return false, time.Time{}, fmt.Errorf("pausedUntil %q is not a valid RFC3339 date-time: %w", *value, err)
	}
	return now.Before(until), until, nil
}

// Paused interprets the NodePool's spec.pausedUntil as ParsePausedUntil
// does a HostedCluster's: the field has one meaning on both kinds.
func (np *NodePool) Paused(now time.Time) (paused bool, until time.Time, err error) {
	return ParsePausedUntil(np.Spec.PausedUntil, now)
}
