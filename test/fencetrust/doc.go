// Package fencetrust tests that the fence can be trusted over a
// HostedCluster's life on one API server of its own: the cluster-wide
// fencing objects come back, a HostedCluster re-created under the same name
// fences its new holder, and a fence the API server cannot keep current is
// reported as wedged. The tests run in order; the last one breaks the API
// server's Lease param cache on purpose.
package fencetrust
