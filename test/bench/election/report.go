package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// configResult is what one configuration measured.
type configResult struct {
	cfg                 configuration
	steady              steadyResult
	graceful, crash     []time.Duration
	podDeleted          []time.Duration
	podFailed           []time.Duration
	backOff             []time.Duration
	failedSamples       []string
	violations          []string
	exampleCrash        *group
	exampleGraceful     *group
	transitionsInSteady int
}

func (r *results) perConfiguration() []configResult {
	var out []configResult
	for _, cfg := range configurations {
		cr := configResult{cfg: cfg}
		sg := r.steady[cfg.key]
		cr.steady = steady(r.requests[sg.ns], r.windowStart, r.windowEnd)
		hs, v := holdings(sg, r.requests[sg.ns])
		cr.violations = append(cr.violations, v...)
		for _, h := range hs {
			if in(h.from, r.windowStart, r.windowEnd) {
				cr.transitionsInSteady++
			}
		}
		for _, g := range r.samples[cfg.key] {
			_, v := holdings(g, r.requests[g.ns])
			cr.violations = append(cr.violations, v...)
			if g.err != nil || g.new == nil {
				cr.failedSamples = append(cr.failedSamples, fmt.Sprintf("%s: %v", g.ns, g.err))
				continue
			}
			switch g.kind {
			case kindGraceful:
				cr.graceful = append(cr.graceful, g.takeover())
				if cr.exampleGraceful == nil {
					cr.exampleGraceful = g
				}
			case kindCrash:
				cr.crash = append(cr.crash, g.takeover())
				if cr.exampleCrash == nil {
					cr.exampleCrash = g
				}
			case kindPodDeleted:
				cr.podDeleted = append(cr.podDeleted, g.takeover())
			case kindPodFailed:
				cr.podFailed = append(cr.podFailed, g.takeover())
			case kindBackOff:
				cr.backOff = append(cr.backOff, g.takeover())
			}
		}
		out = append(out, cr)
	}
	return out
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func maxOf(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	return slices.Max(ds)
}

func dur(d time.Duration) string {
	switch {
	case d < 10*time.Second:
		return fmt.Sprintf("%.3f s", d.Seconds())
	default:
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
}

func ratio(a, b float64) string {
	if b == 0 {
		if a == 0 {
			return "n/a (both 0)"
		}
		return "∞"
	}
	return fmt.Sprintf("%.3f", a/b)
}

func (r *results) markdown(machine, command string, wall time.Duration) (string, []string) {
	crs := r.perConfiguration()
	var failures []string
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }

	w("## Leader election: our elector against client-go's, with three anchor timings\n\n")
	w("Command: `%s`. Machine: %s. Wall time: %s.\n\n", command, machine, wall)
	w("Six configurations in one run, on one API server, three candidates each, every candidate its own API user: ")
	w("client-go's `LeaderElector` with a `LeaseLock` at client-go's default timings (15/10/2: lease duration, renew deadline, retry period in seconds), HyperShift's (60/40/15) and library-go's (137/107/26), ")
	w("and ours (`support/leaderelection`) with its defaults (`config.DefaultControlPlaneOperatorTimings`: 60/45/2, renew every 30s) at client-go's 15/10/2 (renew every 6.7s, two thirds of the deadline) and with a lease five times the default, 300/225/2 (renew every 150s). ")
	w("Per configuration, all at once in namespaces of their own: a steady group counted over a %s window (after %s of settling), ", *window, *settle)
	w("%d graceful samples (the leader's context is cancelled with release on: client-go's `ReleaseOnCancel`, our `NoRelease: false`) ", *samples)
	w("and %d crash samples (cancelled with release off: the Lease stays held, as when the process dies, its pod still running). ", *samples)
	w("%d leader pod force-deleted, %d leader pod failed and %d leader in back-off samples are crashes the kubelet then reports: each candidate has a control-plane-operator pod named as its identity in a control-plane namespace whose fence is in force, and the crashed leader's pod is force-deleted (grace period 0), reported Failed, or reported Running with its container exited and waiting to restart (`CrashLoopBackOff`, as when a container crashes again soon after a restart); the hypershift-operator's lease arbiter (`hypershift-operator/controllers/leasearbiter`, its own API user bound to the operator's ClusterRole) runs for the whole benchmark. ", *samples, *samples, *samples)
	w("A sample's leader is stopped at a random point of its renew period, 3s or more after it started leading; handover and takeover run from that cancel (the pod goes right after it) to a standby's \"started leading\" callback. ")
	w("Lease requests are counted from the API server's audit log, by user: the holder's successful creates and updates, and the other candidates' gets and lists (reads, per follower) and watches (long-lived streams, counted apart). ")
	w("\"Never two holders\" replays every namespace's successful Lease writes from the audit log: a candidate may write the Lease another holds only after that one released it (or the parent did, which it may only once the holder's pod began to go or its container was reported in back-off) or after its last write plus the lease duration.\n\n")

	w("| configuration | timings | leader Lease writes/min | follower Lease reads/min (each) | follower watch requests in window (open through it) | graceful handover median (max) | crash takeover median (max) | never two holders |\n")
	w("|---|---|---|---|---|---|---|---|\n")
	for _, cr := range crs {
		st := cr.steady
		never := "✓"
		if len(cr.violations) > 0 {
			never = fmt.Sprintf("**%d violations**", len(cr.violations))
			failures = append(failures, cr.violations...)
		}
		name := cr.cfg.name
		if !cr.cfg.anchor {
			name = "**" + name + "**"
		}
		w("| %s | %s | %.2f | %.2f | %d (%d) | %s (%s) | %s (%s) | %s |\n", name, cr.cfg.timingsText(),
			st.leaderWritesPerMin(), st.followerReadsPerMin(), st.followerWatches, st.openWatches,
			dur(median(cr.graceful)), dur(maxOf(cr.graceful)), dur(median(cr.crash)), dur(maxOf(cr.crash)), never)
		for _, f := range cr.failedSamples {
			failures = append(failures, cr.cfg.name+": sample failed: "+f)
		}
		if cr.transitionsInSteady > 0 {
			failures = append(failures, fmt.Sprintf("%s: the steady group changed holder %d times in the window", cr.cfg.name, cr.transitionsInSteady))
		}
	}
	w("\nSamples per configuration: %d graceful, %d crash, %d leader pod force-deleted, %d leader pod failed, %d leader in back-off (failed samples: %d).", *samples, *samples, *samples, *samples, *samples, countFailed(crs))
	w(" Followers' reads in the steady window are per follower (two per group); client-go's followers poll every retry period plus a jitter of up to 1.2 of it.\n\n")

	ours := crs[len(crs)-1]
	w("Ours / anchor (below 1: ours is lower):\n\n")
	w("| ours / anchor | leader writes/min | follower reads/min | graceful handover median | crash takeover median | crash takeover max | pod force-deleted takeover median / anchor's crash takeover median | pod failed takeover median / anchor's crash takeover median |\n")
	w("|---|---|---|---|---|---|---|---|\n")
	ratioRow := func(ours, cr configResult) {
		w("| %s / %s | %s | %s | %s | %s | %s | %s | %s |\n", ours.cfg.name, cr.cfg.name,
			ratio(ours.steady.leaderWritesPerMin(), cr.steady.leaderWritesPerMin()),
			ratio(ours.steady.followerReadsPerMin(), cr.steady.followerReadsPerMin()),
			ratio(median(ours.graceful).Seconds(), median(cr.graceful).Seconds()),
			ratio(median(ours.crash).Seconds(), median(cr.crash).Seconds()),
			ratio(maxOf(ours.crash).Seconds(), maxOf(cr.crash).Seconds()),
			ratio(median(ours.podDeleted).Seconds(), median(cr.crash).Seconds()),
			ratio(median(ours.podFailed).Seconds(), median(cr.crash).Seconds()))
	}
	for _, cr := range crs {
		if cr.cfg.anchor {
			ratioRow(ours, cr)
		}
	}
	for _, o := range crs {
		for _, cr := range crs {
			if o.cfg.sameLeaseAs != "" && o.cfg.sameLeaseAs == cr.cfg.key {
				ratioRow(o, cr)
			}
		}
	}
	w("\nAt a 60s lease duration a crash takeover takes up to a minute by design; the row of ours at 15/10/2 compares ours with client-go at the same lease duration. ")
	w("The last two columns compare ours, when the parent releases the Lease of a leader whose pod is gone, with the anchor in the same situation without a parent (as HyperShift runs it), which waits out the lease duration as after a crash.\n")
	parentSection(w, crs)
	longLeaseSection(w, crs)

	ld := ours.cfg.timings.LeaseDuration
	type goal struct {
		what, required, measured string
		ok                       bool
	}
	goals := []goal{
		{"leader Lease writes/min", "≤ 2", fmt.Sprintf("%.2f", ours.steady.leaderWritesPerMin()), ours.steady.leaderWritesPerMin() <= 2},
		{"follower Lease reads in the window", "0", fmt.Sprintf("%d", ours.steady.followerReads), ours.steady.followerReads == 0},
		{"graceful handover (max)", "≤ 1 s", dur(maxOf(ours.graceful)), len(ours.graceful) > 0 && maxOf(ours.graceful) <= time.Second},
		{"crash takeover (max)", fmt.Sprintf("≤ LD + 1s = %s", dur(ld+time.Second)), dur(maxOf(ours.crash)), len(ours.crash) > 0 && maxOf(ours.crash) <= ld+time.Second},
		{"leader pod force-deleted: takeover median", "≤ 2 s", dur(median(ours.podDeleted)), len(ours.podDeleted) > 0 && median(ours.podDeleted) <= 2*time.Second},
		{"leader pod force-deleted: takeover max", "≤ 3 s", dur(maxOf(ours.podDeleted)), len(ours.podDeleted) > 0 && maxOf(ours.podDeleted) <= 3*time.Second},
		{"leader pod failed: takeover median", "≤ 2 s", dur(median(ours.podFailed)), len(ours.podFailed) > 0 && median(ours.podFailed) <= 2*time.Second},
		{"leader pod failed: takeover max", "≤ 3 s", dur(maxOf(ours.podFailed)), len(ours.podFailed) > 0 && maxOf(ours.podFailed) <= 3*time.Second},
		{"leader in back-off: takeover median", "≤ 2 s", dur(median(ours.backOff)), len(ours.backOff) > 0 && median(ours.backOff) <= 2*time.Second},
		{"leader in back-off: takeover max", "≤ 3 s", dur(maxOf(ours.backOff)), len(ours.backOff) > 0 && maxOf(ours.backOff) <= 3*time.Second},
	}
	w("\nGoals for ours at LD %s:\n\n| goal | required | measured | |\n|---|---|---|---|\n", seconds(ld))
	for _, g := range goals {
		verdict := "met"
		if !g.ok {
			verdict = "**missed**"
			failures = append(failures, fmt.Sprintf("goal missed: %s: %s, required %s", g.what, g.measured, g.required))
		}
		w("| %s | %s | %s | %s |\n", g.what, g.required, g.measured, verdict)
	}

	w("\nEvery sample, in seconds from the cancel to a standby leading:\n\n| configuration | graceful handover | crash takeover | leader pod force-deleted | leader pod failed | leader in back-off |\n|---|---|---|---|---|---|\n")
	for _, cr := range crs {
		w("| %s | %s | %s | %s | %s | %s |\n", cr.cfg.name, list(cr.graceful), list(cr.crash), list(cr.podDeleted), list(cr.podFailed), list(cr.backOff))
	}
	w("\nSteady window, all Lease requests: ")
	for i, cr := range crs {
		if i > 0 {
			w("; ")
		}
		st := cr.steady
		w("%s: leader %d (writes %d), followers' reads %d, watches %d, writes %d", cr.cfg.name, st.leaderRequests, st.leaderWrites, st.followerReads, st.followerWatches, st.followerWrites)
	}
	w(".\n\n")
	w("![Lease requests and holder during one crash takeover and one graceful handover per configuration](%s)\n\n", chartFile)
	w("The chart ([%s](%s)) shows one crash sample (left, on a common time axis) and one graceful sample (right) per configuration, from the audit log: each candidate's Lease writes (squares; hollow when refused) and reads (circles), watch requests (triangles, with a line while the stream is open), and who holds the Lease (bars; hatched while it still names the stopped leader). Time 0 is the leader's stop; the dashed line is a standby's \"started leading\".\n", chartFile, chartFile)
	if len(failures) > 0 {
		w("\nFailures:\n\n")
		for _, f := range failures {
			w("- %s\n", f)
		}
	}
	return b.String(), failures
}

func countFailed(crs []configResult) int {
	n := 0
	for _, cr := range crs {
		n += len(cr.failedSamples)
	}
	return n
}

func list(ds []time.Duration) string {
	var parts []string
	for _, d := range ds {
		parts = append(parts, fmt.Sprintf("%.3f", d.Seconds()))
	}
	return strings.Join(parts, ", ")
}

// parentSection writes the takeovers when the leader's pod is gone, beside
// the crash takeover, one column per configuration.
func parentSection(w func(string, ...any), crs []configResult) {
	w("\n### When the leader's pod is gone, the parent arbitrates\n\n")
	w("Takeover median (max), from the leader's stop to a standby leading. In the crash row the leader's pod still runs, so no one may release its Lease: every elector waits out the lease duration, as every anchor does in all three rows without a parent. ")
	w("In the other rows the hypershift-operator releases the Lease once the pod is gone, or, under the fence, once the kubelet reports the leader's container waiting to restart; our standbys see the release through their watch, client-go's at their next poll (every retry period, with a jitter).\n\n")
	w("| situation |")
	for _, cr := range crs {
		w(" %s |", cr.cfg.name)
	}
	w("\n|---|")
	for range crs {
		w("---|")
	}
	w("\n")
	for _, row := range []struct {
		name string
		of   func(configResult) []time.Duration
	}{
		{"crash (process gone, pod running)", func(cr configResult) []time.Duration { return cr.crash }},
		{"leader pod force-deleted", func(cr configResult) []time.Duration { return cr.podDeleted }},
		{"leader pod failed", func(cr configResult) []time.Duration { return cr.podFailed }},
		{"leader in back-off (pod running, container waiting to restart)", func(cr configResult) []time.Duration { return cr.backOff }},
	} {
		w("| %s |", row.name)
		for _, cr := range crs {
			w(" %s (%s) |", dur(median(row.of(cr))), dur(maxOf(row.of(cr))))
		}
		w("\n")
	}
}

// longLeaseSection compares each configuration of ours with a longer lease
// with the configuration it must not make slower: Lease writes, and every
// takeover, median and max.
func longLeaseSection(w func(string, ...any), crs []configResult) {
	byKey := map[string]configResult{}
	for _, cr := range crs {
		byKey[cr.cfg.key] = cr
	}
	for _, long := range crs {
		base, ok := byKey[long.cfg.longLeaseOf]
		if !ok {
			continue
		}
		w("\n### A longer lease: %s against %s\n\n", long.cfg.name, base.cfg.name)
		w("Whether the parent lets the lease grow without a slower takeover: the longer lease's leader writes less, and only the takeovers that wait out the lease duration should grow. Ratios are long / default (above 1: slower or more).\n\n")
		w("| measure | %s | %s | ratio |\n|---|---|---|---|\n", base.cfg.name, long.cfg.name)
		w("| leader Lease writes/min | %.2f | %.2f | %s |\n", base.steady.leaderWritesPerMin(), long.steady.leaderWritesPerMin(), ratio(long.steady.leaderWritesPerMin(), base.steady.leaderWritesPerMin()))
		var slower []string
		for _, row := range []struct {
			name string
			of   func(configResult) []time.Duration
		}{
			{"graceful handover", func(cr configResult) []time.Duration { return cr.graceful }},
			{"crash takeover (process gone, pod running)", func(cr configResult) []time.Duration { return cr.crash }},
			{"leader pod force-deleted", func(cr configResult) []time.Duration { return cr.podDeleted }},
			{"leader pod failed", func(cr configResult) []time.Duration { return cr.podFailed }},
			{"leader in back-off", func(cr configResult) []time.Duration { return cr.backOff }},
		} {
			b, l := row.of(base), row.of(long)
			w("| %s, median (max) | %s (%s) | %s (%s) | %s (%s) |\n", row.name, dur(median(b)), dur(maxOf(b)), dur(median(l)), dur(maxOf(l)),
				ratio(median(l).Seconds(), median(b).Seconds()), ratio(maxOf(l).Seconds(), maxOf(b).Seconds()))
			// Slower: beyond the default's max and a second of noise.
			if maxOf(l) > maxOf(b)+time.Second || median(l) > median(b)+time.Second {
				slower = append(slower, row.name)
			}
		}
		if len(slower) == 0 {
			w("\nNo takeover is slower with %s.\n", long.cfg.name)
		} else {
			w("\nSlower with %s: %s.\n", long.cfg.name, strings.Join(slower, "; "))
		}
	}
}
