// Package leasearbiter is the hypershift-operator's parent arbitration of
// control-plane-operator leader election: when the pod that a CPO Lease
// names as its holder is gone (it does not exist, is in a terminal phase,
// or is being deleted and its container terminated), the controller
// clears the Lease's holder, so that a standby, which watches the Lease,
// takes it at once instead of waiting out the lease duration.
//
// The controller is narrow on purpose, one concern with a field manager of
// its own (FieldOwner). It runs on the leading hypershift-operator only,
// like every controller of the operator. It watches the CPO Lease of every
// control-plane namespace (the manager's cache holds no other Lease), the
// metadata of pods labelled app=control-plane-operator, and the
// HostedClusters. It reads a holder's full pod object from the API server
// only when the metadata says that pod changed, so that a converged
// cluster costs neither a read nor a write.
//
// What it writes, and when (the argument is in the package documentation
// of support/leaderelection):
//
//   - only the holder of a Lease in a control-plane namespace claimed by a
//     HostedCluster (the namespace's cluster annotation) that is not
//     paused, and only when holderpod.Judge says the holder is gone;
//   - only an update that clears the holder (as the elector's own release
//     does), carrying the resourceVersion of the read that named the gone
//     holder: a Lease that changed since is not touched (409), and is
//     looked at again. It never writes a holder identity, and never deletes
//     a Lease;
//   - at once when the API server is seen to fence the namespace (the
//     HostedCluster's LeaderFencing condition is True and the fencing
//     policy and binding exist): a process of the gone pod, should it still
//     run, is refused every write by the fence, since the Lease no longer
//     names it;
//   - otherwise only once the pod object has been gone for TokenWindow,
//     after which the API server no longer accepts the pod's token; a
//     holder whose pod object still exists (in a terminal phase, or being
//     deleted) is then left to the lease-duration rule, since its token
//     still authenticates.
//
// A holder whose pod object still says it runs, on a node whose kubelet
// has stopped heartbeating (its node Lease in kube-node-lease unchanged for
// nodeheartbeat.DefaultLostAfter, 30s, as this process saw it and as a
// read from the API server confirms), is released too, but only where the
// fence is seen in force: a node that is cut off rather than dead may
// still run the holder's process, and only the fence keeps its writes out
// once the Lease names another. Without the fence that Lease runs its
// duration. Nothing is polled for it: each node's heartbeat restarts a
// timer, and a timer that fires wakes the Leases whose holders were last
// seen on that node.
//
// A holder whose pod runs but whose container exited and waits in the
// kubelet's restart back-off (holderpod.Judge says Stopped: a leader in a
// crash loop), or reads exited and not started again for RestartGrace
// (DefaultRestartGrace, 6s: a back-off the kubelet reports only at its
// next sync of the pod, about 10s after the exit), is released too, only
// where the fence is seen in force: a process of it starts again under the
// same identity when the back-off ends, and the status read may lag that
// start. Such a pod version is never remembered as running, so a fence
// observed later still releases, and an exit is looked at again when its
// grace ends.
//
// Each release is recorded as an event on the HostedCluster: "Lease
// released for <pod>: pod gone (<reason>)", "...: its node <node>
// stopped heartbeating <duration> ago", "...: container exited, waiting
// to restart (CrashLoopBackOff)", or "...: container exited, not
// restarted for <duration>".
package leasearbiter
