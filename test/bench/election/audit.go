package main

import (
	"fmt"
	"strings"
	"time"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/hypershift-le/hypershift/test/auditlog"
)

// request is one Lease request from the audit log.
type request struct {
	at time.Time
	// end is when a watch ended (zero while open).
	end  time.Time
	user string
	verb string
	code int32
}

func (r request) write() bool { return r.verb == "create" || r.verb == "update" || r.verb == "patch" }
func (r request) read() bool  { return r.verb == "get" || r.verb == "list" }
func (r request) ok() bool    { return r.code >= 200 && r.code < 300 }

// leaseRequests returns the Lease requests of the benchmark's namespaces,
// by namespace, in the order the API server received them. A watch is
// logged when its response starts and when it ends; it counts once.
func leaseRequests(events []auditv1.Event) map[string][]request {
	out := map[string][]request{}
	for _, e := range auditlog.Requests(events) {
		if e.ObjectRef == nil || e.ObjectRef.Resource != "leases" || !strings.HasPrefix(e.ObjectRef.Namespace, "election-") {
			continue
		}
		r := request{at: e.RequestReceivedTimestamp.Time, user: e.User.Username, verb: e.Verb, code: auditlog.Code(e)}
		if e.Verb == "watch" {
			r.code = 200
			if e.Stage == auditv1.StageResponseComplete {
				r.end = e.StageTimestamp.Time
			}
		}
		out[e.ObjectRef.Namespace] = append(out[e.ObjectRef.Namespace], r)
	}
	return out
}

// holding is one candidate holding the Lease, reconstructed from the
// successful Lease writes.
type holding struct {
	user     string
	from, to time.Time
	// end is "released", "released by the parent", "taken over" or ""
	// (still held at the end).
	end string
}

// holdings replays the successful Lease writes of g's namespace. A write
// by a candidate other than the holder must come after a release or after
// the holder's last write plus the lease duration: otherwise two
// candidates held the Lease at once, and it is reported as a violation.
// A release is the last successful write of a candidate after it was
// stopped gracefully (the audit log at Metadata level has no bodies), or
// any write by the parent's lease arbiter, which may only come once the
// holder's pod began to go.
func holdings(g *group, rs []request) (hs []holding, violations []string) {
	releaseAt := map[string]time.Time{}
	for _, c := range g.cands {
		stopped := c.stopped()
		if !c.release || stopped.IsZero() {
			continue
		}
		for _, r := range rs {
			if r.user == c.user && r.write() && r.ok() && !r.at.Before(stopped) {
				releaseAt[c.user] = r.at
			}
		}
	}
	ld := g.cfg.timings.LeaseDuration
	var cur *holding
	var last time.Time
	for _, r := range rs {
		if !r.write() || !r.ok() {
			continue
		}
		if r.user == arbiterUser {
			if !g.podKind() || g.goneAt.IsZero() || r.at.Before(g.goneAt) {
				violations = append(violations, fmt.Sprintf("%s: the parent released the Lease at %s, before its holder's pod was gone", g.ns, r.at.Format("15:04:05.000")))
			}
			if cur != nil {
				cur.to, cur.end = r.at, "released by the parent"
				hs = append(hs, *cur)
				cur = nil
			}
			continue
		}
		if cur != nil && r.user == cur.user {
			if at, ok := releaseAt[r.user]; ok && r.at.Equal(at) {
				cur.to, cur.end = r.at, "released"
				hs = append(hs, *cur)
				cur = nil
				continue
			}
			last = r.at
			continue
		}
		if cur != nil {
			if expiry := last.Add(ld); r.at.Before(expiry) {
				violations = append(violations, fmt.Sprintf("%s: %s wrote the Lease at %s while %s held it until %s",
					g.ns, r.user, r.at.Format("15:04:05.000"), cur.user, expiry.Format("15:04:05.000")))
			}
			cur.to, cur.end = r.at, "taken over"
			hs = append(hs, *cur)
		}
		if _, ok := releaseAt[r.user]; ok && r.at.Equal(releaseAt[r.user]) {
			// A release write by a non-holder would be a bug of its own.
			violations = append(violations, fmt.Sprintf("%s: %s released a Lease it did not hold", g.ns, r.user))
		}
		cur = &holding{user: r.user, from: r.at}
		last = r.at
	}
	if cur != nil {
		hs = append(hs, *cur)
	}
	return hs, violations
}

// steadyResult is the traffic of the steady group over the window.
type steadyResult struct {
	holder string
	// leaderWrites counts the holder's successful creates and updates;
	// leaderRequests all its Lease requests.
	leaderWrites, leaderRequests int
	// followerReads counts the non-holders' gets and lists,
	// followerWatches their watch requests, followerWrites their writes
	// (successful or not).
	followerReads, followerWatches, followerWrites int
	// openWatches is how many non-holder watches were open through the
	// whole window.
	openWatches int
	minutes     float64
}

func (s steadyResult) leaderWritesPerMin() float64 { return float64(s.leaderWrites) / s.minutes }

// followerReadsPerMin is per follower.
func (s steadyResult) followerReadsPerMin() float64 {
	return float64(s.followerReads) / s.minutes / float64(candidates-1)
}

func steady(rs []request, from, to time.Time) steadyResult {
	res := steadyResult{minutes: to.Sub(from).Minutes()}
	writes := map[string]int{}
	for _, r := range rs {
		if in(r.at, from, to) && r.write() && r.ok() {
			writes[r.user]++
		}
	}
	for u, n := range writes {
		if n > writes[res.holder] || (n == writes[res.holder] && u < res.holder) {
			res.holder = u
		}
	}
	res.leaderWrites = writes[res.holder]
	for _, r := range rs {
		if r.verb == "watch" && r.user != res.holder && r.at.Before(from) && (r.end.IsZero() || !r.end.Before(to)) {
			res.openWatches++
		}
		if !in(r.at, from, to) {
			continue
		}
		if r.user == res.holder {
			res.leaderRequests++
			continue
		}
		switch {
		case r.read():
			res.followerReads++
		case r.verb == "watch":
			res.followerWatches++
		case r.write():
			res.followerWrites++
		}
	}
	return res
}

func in(t, from, to time.Time) bool { return !t.Before(from) && t.Before(to) }
