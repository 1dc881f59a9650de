// Package nodes starts real Kubernetes nodes on this machine, as kind does
// in containers: each node is a network namespace of its own (its own
// address on a host bridge, its pods' addresses routed to it) with its own
// containerd and kubelet, joined to a kube-apiserver with a client
// certificate. Nothing rewrites what a pod asks for: pods pull their images
// from a registry and run in containers started by the kubelet.
//
// Bringing a node up is a list of small named steps (Start); every change
// they make to the host (network namespaces, links, routes, sysctls,
// processes, mounts, cgroups) is recorded by one owner, Host, which undoes
// it all, in reverse, on Close; it also journals each change under /run,
// so that what a killed process left is undone by the next holder of the
// machine's lock (Reap). The settings of containerd, the kubelet and
// CNI are files beside this one (containerd.toml, kubelet.yaml,
// cni.conflist), filled in per node.
package nodes
