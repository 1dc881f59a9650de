// Package e2e proves the project's central promise on the local cluster
// (test/localcluster) on real nodes: real Deployments, pods run by kubelets
// in containers from this repository's images under pod-bound
// ServiceAccount tokens, and the API server's audit log as the only witness
// of who wrote what.
package e2e
