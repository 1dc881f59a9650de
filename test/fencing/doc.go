// Package fencing proves, against the real API server, what the
// control-plane-operator fencing policy allows and denies.
package fencing
