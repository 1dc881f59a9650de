// Package podnetwork is a hosted cluster's pod network on the machines of
// its NodePools of platform Pod: each machine runs the Agent in its own
// init (hypershift-machine run), in the machine's network, from its start;
// on machines made before that, a DaemonSet of the hosted cluster (the
// control-plane-operator renders it) runs it (label NodeLabel without
// hyperv1.PodNetworkAgentLabel).
//
// Each machine's pods get addresses from its Node's spec.podCIDR, which the
// hosted kube-controller-manager allocates from the cluster network, on a
// bridge (the CNI bridge and host-local plugins: the configuration the Agent
// writes to /etc/cni/net.d, which tells the kubelet the network is ready).
// Between machines, pods reach each other through a VXLAN device, as
// flannel's vxlan back end does: a route per peer's pod subnet through the
// peer's gateway address, a permanent neighbour entry mapping that address to
// the peer's VXLAN MAC, and a forwarding entry sending that MAC to the
// peer's address. A machine's VXLAN MAC is derived from its address
// (MACFor), so no machine publishes anything: the Agent only reads Nodes.
// Pod traffic that leaves the cluster network is masqueraded to the
// machine's address, the only one the management cluster routes back.
//
// Everything the Agent sets is in the machine's network namespace; it is
// gone with the machine. IPv4 only.
package podnetwork
