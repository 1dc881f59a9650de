// Package leaderelection is the Lease-based leader election of the
// project's operators: one holder per Lease, a standby that writes nothing,
// and less API-server traffic than client-go's polling elector.
//
// # How it elects
//
// Every candidate watches the one Lease object (a list and watch with a
// metadata.name field selector): followers make no reads while the Lease
// is held, they learn of each change through the watch. A follower judges
// expiry as client-go does, on its own clock: the Lease is expired
// spec.leaseDurationSeconds after the follower last saw its resourceVersion
// change. Then, or at once when the Lease is released (no holder) or
// missing, it takes the Lease with a compare-and-swap: an update carrying
// the resourceVersion it saw, or a create. A 409 means someone wrote first;
// it reads the Lease once and waits again.
//
// The leader renews every renew interval with the same compare-and-swap on
// its own last write, so that a renewal can never overwrite another
// holder. After a failed renewal it retries every retry period until the
// renew deadline, counted from the start of its last successful renewal;
// every request times out by then. At the deadline, or as soon as the watch
// shows another holder or a deleted Lease, it stops leading; a loss ends
// the process (see below for a deadline passed during an outage).
//
// # Outages: cut off, not lost
//
// When no renewal succeeds by the renew deadline and the API server refused
// none of them (they timed out, the connection failed, it answered 5xx or
// 429), the leader stops its leader-only work at the deadline exactly as
// before, but the process stays: it is cut off, its caches stay warm, and
// it keeps renewing every retry period with the same compare-and-swap on its
// own last write. That renewal can succeed only if nobody wrote the Lease
// meanwhile, so a successful one means nobody else held it: the candidate
// leads again, in a new term with new controllers on the same cache. A
// conflict that shows another holder, a deleted Lease, or a refusal ends
// the process as a loss. A process frozen past its deadline takes the same
// path: when it runs again, its renewal either succeeds or shows the
// successor.
//
// Followers prefer the incumbent after an outage. A follower that cannot
// list or watch the Lease is blind: it takes nothing over, and when it
// sees the Lease again it counts the lease duration from then, not from
// the last change it saw before the gap. It also reads the Lease before
// taking over an expired one, and a read that gets no answer counts as a
// gap too: a late read is harmless where a late takeover write would not
// be. Waiting longer is always safe; it lets an incumbent that was cut off
// by the same outage renew first. A holder that is really gone is still
// replaced one lease duration after the follower sees the API server again
// (or at once by the hypershift-operator when its pod is gone). A follower
// whose watch stays open to a frozen API server sees no gap; its read
// before the takeover then does.
//
// Readiness (see Ready) reports a candidate refused by the API server at
// once, and one cut off for longer than the renew deadline.
//
// Release is ordered and scoped to the holder: the leader first stops its
// leader-only work and waits for it, then reads the Lease and clears the
// holder only if it is still itself, preconditioned on that read's
// resourceVersion. A deposed leader therefore never releases, and a late
// release cannot clobber a new holder. Followers see the release through
// the watch and take the Lease at once.
//
// # The timing rule
//
// Let LD be the lease duration, RD the renew deadline, RI the renew
// interval, RP the retry period and M = max(1s, LD/10) the clock-skew
// margin. A leader whose last successful renewal started at t stops leading
// by t+RD on its clock. No follower can have seen that renewal before t, so
// none takes over before t+LD on its clock. With
//
//	RD + M <= LD   and   RI + RP <= RD
//
// the leader stops at least M before any follower may take over (M covers
// the rate difference of the two clocks over LD and the time the leader's
// controllers take to stop), and a failed renewal is retried at least once
// before the deadline. config.LeaderElection.Validate enforces both; the
// operators refuse to start otherwise. Writes of a leader that is frozen
// past its deadline (a stopped process, a hung connection that later
// delivers) are what the fencing admission policy refuses: the Lease no
// longer names it.
package leaderelection
