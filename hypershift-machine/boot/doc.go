// Package boot brings up a machine of a NodePool of platform Pod: a
// privileged Pod of the management cluster that is a whole Kubernetes node
// of a hosted cluster, as a KubeVirt VM in a pod is one, or a kind node in
// a container. It runs containerd and the kubelet inside the Pod, which
// joins the hosted cluster with the NodePool's join material (a bootstrap
// token, the hosted cluster's CA and its part of the kubelet's
// configuration), nothing else.
//
// Bringing the machine up is a list of small named steps (Run): the cgroup
// hierarchies, the files (containerd.toml and kubelet.yaml beside this
// file, filled in per machine), containerd, the kubelet. The machine then
// supervises both: when either exits, the machine exits, and the Pod's
// restart is the machine's reboot (its disks, emptyDir volumes, survive
// it). SIGTERM stops the kubelet, then containerd, and the Pod's end takes
// every container the machine ran with it: they live in its namespaces.
//
// The machine changes nothing outside its Pod that a node's kubelet would:
// the kubelet runs with protectKernelDefaults, so it checks the kernel's
// settings instead of writing them, and every network change is in the
// Pod's network namespace.
package boot
