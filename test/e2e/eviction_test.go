package e2e

import (
	"fmt"
	"slices"
	"strings"
	"time"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// evictionTimes describes, from the audit log, how long each pod of ns
// evicted since from took to go: from its eviction to the kubelet's
// removal of its object (its containers stopped), longest first. It
// names each pod whose removal the log does not show yet.
func evictionTimes(events []auditv1.Event, ns string, from time.Time) string {
	evicted := map[string]time.Time{}
	removed := map[string]time.Time{}
	for _, e := range events {
		ref, at := e.ObjectRef, e.RequestReceivedTimestamp.Time
		if ref == nil || ref.Resource != "pods" || ref.Namespace != ns || at.Before(from) ||
			e.ResponseStatus == nil || e.ResponseStatus.Code >= 300 {
			continue
		}
		switch {
		case e.Verb == "create" && ref.Subresource == "eviction":
			if _, seen := evicted[ref.Name]; !seen {
				evicted[ref.Name] = at
			}
		case e.Verb == "delete" && ref.Subresource == "" && strings.HasPrefix(e.User.Username, "system:node:"):
			removed[ref.Name] = at
		}
	}
	type gone struct {
		pod  string
		took time.Duration
	}
	var times []gone
	for pod, at := range evicted {
		took := time.Duration(-1)
		if end, ok := removed[pod]; ok {
			took = end.Sub(at)
		}
		times = append(times, gone{pod, took})
	}
	slices.SortFunc(times, func(a, b gone) int { return int(b.took - a.took) })
	var parts []string
	for _, g := range times {
		if g.took < 0 {
			parts = append(parts, g.pod+" not removed yet")
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s", g.pod, g.took.Round(100*time.Millisecond)))
	}
	return strings.Join(parts, ", ")
}
