// Package e2e proves the project's central promise on the local cluster
// (test/localcluster): real Deployments, real pods running this
// repository's binaries under pod-bound ServiceAccount tokens, and the API
// server's audit log as the only witness of who wrote what.
package e2e
