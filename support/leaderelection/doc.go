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
// the process as a loss. A conflict that shows the candidate itself still
// holding is its own earlier renewal landing late (the API server receives,
// when it answers again, requests the candidate gave up on): it renews on
// top of it at once, not a retry period later. A process frozen past its
// deadline takes the same path: when it runs again, its renewal either
// succeeds or shows the successor.
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
// before the deadline. config.Timings.Validate enforces both; the
// operators refuse to start otherwise. Writes of a leader that is frozen
// past its deadline (a stopped process, a hung connection that later
// delivers) are what the fencing admission policy refuses: the Lease no
// longer names it.
//
// # When the holder's pod is gone: the parent releases
//
// A leader that stops without releasing (its pod force-deleted, evicted or
// lost with its node, its process killed while the pod goes away) leaves
// its standbys waiting the lease duration. For the control-plane-operator
// the hypershift-operator knows more than the candidates: it watches their
// pods. When the pod a CPO Lease names no longer runs a holder
// (holderpod.Judge: no pod has that name, the pod is in a terminal phase,
// or it is being deleted and its container terminated), the
// hypershift-operator's lease arbiter clears the holder, with an update
// preconditioned on the resourceVersion of the read that named the gone
// holder, just as a release by the holder itself; the standbys see it
// through their watch and take the Lease at once. A holder whose pod exists
// and runs is never released for being silent itself: a frozen or
// partitioned process keeps the timing rule above. The parent never names
// a holder, it only clears one.
//
// One exception, under the fence only: a holder whose pod object says it
// runs, on a node whose kubelet has stopped heartbeating for
// nodeheartbeat.DefaultLostAfter (30s; the kubelet renews its node Lease
// every 10s), is released as if its pod were gone: a lost node's pods stay
// Running in the API until the node controller evicts them minutes later.
// The node may only be cut off, its process still running; that is why the
// parent does it only where it has seen the fence in force, which refuses
// every write of that process once the Lease names another, and, with
// fencing off, leaves the Lease to its duration (test: the arbiter's
// TestNodeLost, both ways).
//
// A second, under the fence only: a holder whose pod runs but whose
// container exited and waits in the kubelet's restart back-off (a leader in
// a crash loop; holderpod.Judge says Stopped, or its container has read
// exited for the arbiter's restart grace, 6s, without a restart). No process of it runs, but
// one starts under the same identity when the back-off ends, and could find
// the Lease still naming it while the parent reads a status that lags that
// start; the fence refuses its writes once the Lease names another. A first
// crash is restarted at once and its new process renews the Lease it holds
// (same identity), with or without the parent; it is a loop that would
// otherwise hold the standbys for the lease duration at every back-off
// (test: the arbiter's TestCrashLoopingHolder and TestExitedHolder, both
// ways).
//
// Why this cannot make two writers, although the parent cannot know that
// the gone pod's process has stopped (a partitioned node may still run it):
//
//   - A pod-bound ServiceAccount token stops authenticating once its pod
//     object is deleted, but not at once: the API server caches a successful
//     token authentication for 10 seconds. Measured on kube-apiserver
//     1.37.2 (test/fencing): accepted about 10s after a forced delete, 401
//     from then on. After that window a process of the deleted pod can
//     write nothing anywhere.
//   - Inside that window, and for a pod in a terminal phase (whose token
//     authenticates for as long as the pod object exists), the fencing
//     policy refuses every write by a control-plane-operator pod that the
//     Lease does not name. Once released, the Lease names no one, then the
//     new holder: the gone pod's writes are refused (test/fencing shows
//     both, and that without the fence the same write goes through). Its
//     Lease writes are compare-and-swap updates on a resourceVersion the
//     release changed, so they fail with a conflict, and the elector stops
//     leading when it sees another holder.
//   - So the parent releases at once only where it has seen the fence in
//     force (the HostedCluster's LeaderFencing condition is True, from a
//     probe of the API server). Without it (--enable-fencing=false, an API
//     server that cannot fence, a fence not yet verified or stale), it
//     releases only once the holder's pod object has been gone for the
//     token window (leasearbiter.TokenWindow, 15s), and leaves the Lease of
//     a pod whose object still exists to the lease duration.
//
// The holder identity stays the pod's name. Deployment pods get generated
// names, and the API server refuses to create a name that exists, so a
// name names one pod while it can hold the Lease. A name that comes back
// (a pod created by hand under a gone pod's name) only makes the parent
// more careful: it judges the pod that has the name now, sees it run, and
// leaves the Lease alone.
//
// # Shards: several Leases, several replicas at work
//
// Manager.AddShards splits a process's keyed leader-only work over several
// Leases, one per shard, each campaigned for by this same elector; a
// candidate contends (Config.Contend) only for the shards assigned to it
// among the live replicas, which member Leases tell. See shards.go.
package leaderelection
