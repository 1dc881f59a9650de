// Package fencing proves, against the real API server, what the
// control-plane-operator fencing policy allows and denies, and what a
// process of a deleted or failed pod can still do with its pod-bound token:
// the facts that make the hypershift-operator's release of a gone pod's
// Lease safe.
package fencing
