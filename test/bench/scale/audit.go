package main

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/hypershift-le/hypershift/test/auditlog"
)

// byUser keeps the requests made by user.
func byUser(events []auditv1.Event, user string) []auditv1.Event {
	var out []auditv1.Event
	for _, e := range events {
		if e.User.Username == user {
			out = append(out, e)
		}
	}
	return out
}

// between keeps the requests received in [from, to).
func between(events []auditv1.Event, from, to time.Time) []auditv1.Event {
	var out []auditv1.Event
	for _, e := range events {
		at := e.RequestReceivedTimestamp.Time
		if !at.Before(from) && at.Before(to) {
			out = append(out, e)
		}
	}
	return out
}

// tally counts requests.
type tally struct {
	total, reads, writes int
	// verbs counts by verb.
	verbs map[string]int
	// calls counts by "verb resource[/subresource]".
	calls map[string]int
	// failed counts the requests answered outside 2xx, by status code.
	failed map[int32]int
}

func count(events []auditv1.Event) tally {
	t := tally{verbs: map[string]int{}, calls: map[string]int{}, failed: map[int32]int{}}
	for _, e := range events {
		t.total++
		if auditlog.IsWrite(e) {
			t.writes++
		} else {
			t.reads++
		}
		t.verbs[e.Verb]++
		t.calls[e.Verb+" "+resourceOf(e)]++
		if e.ResponseStatus != nil && e.ResponseStatus.Code != 0 && !auditlog.Succeeded(e) {
			t.failed[e.ResponseStatus.Code]++
		}
	}
	return t
}

// resourceOf names the request's resource and subresource, or its path.
func resourceOf(e auditv1.Event) string {
	if e.ObjectRef == nil {
		return e.RequestURI
	}
	r := e.ObjectRef.Resource
	if e.ObjectRef.Subresource != "" {
		r += "/" + e.ObjectRef.Subresource
	}
	return r
}

// describe names one request for a log line: time, verb, object, status.
func describe(e auditv1.Event) string {
	object := e.RequestURI
	if ref := e.ObjectRef; ref != nil {
		object = resourceOf(e) + " " + ref.Namespace + "/" + ref.Name
	}
	code := int32(0)
	if e.ResponseStatus != nil {
		code = e.ResponseStatus.Code
	}
	return fmt.Sprintf("%s %s %s -> %d (%s)", e.RequestReceivedTimestamp.Format("15:04:05.000"), e.Verb, object, code, e.UserAgent)
}

// sortedKeys returns m's keys, largest count first, equal counts in key
// order.
func sortedKeys[K cmp.Ordered](m map[K]int) []K {
	keys := slices.Collect(maps.Keys(m))
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	return keys
}

// verbSummary is "get 1.23, patch 4.56, ..." per unit.
func (t tally) verbSummary(per float64) string {
	var parts []string
	for _, verb := range sortedKeys(t.verbs) {
		parts = append(parts, fmt.Sprintf("%s %s", verb, ratio(t.verbs[verb], per)))
	}
	return strings.Join(parts, ", ")
}

// failedSummary is "12 × HTTP 409, 1 × HTTP 500", or "none".
func (t tally) failedSummary() string {
	if len(t.failed) == 0 {
		return "none"
	}
	var parts []string
	for _, code := range sortedKeys(t.failed) {
		parts = append(parts, fmt.Sprintf("%d × HTTP %d", t.failed[code], code))
	}
	return strings.Join(parts, ", ")
}

// ratio formats n/per with two decimals, or n when per is 1.
func ratio(n int, per float64) string {
	if per == 1 {
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("%.2f", float64(n)/per)
}
