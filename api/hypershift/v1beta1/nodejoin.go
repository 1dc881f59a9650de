package v1beta1

import (
	"errors"
	"net/netip"
)

// How worker nodes join a hosted cluster: with a bootstrap token (kubelet
// TLS bootstrap), as kubeadm's nodes do. These names are contracts between
// the control-plane-operator, which installs the bootstrap RBAC in the
// hosted cluster, and whoever issues the tokens.
const (
	// NodeBootstrapGroup is the extra group (auth-extra-groups) of the
	// bootstrap tokens nodes join a hosted cluster with. The hosted
	// cluster's RBAC lets it do nothing but ask for a kubelet client
	// certificate, which kube-controller-manager approves.
	NodeBootstrapGroup = "system:bootstrappers:hypershift:nodes"
)

// How a NodePool's nodes get their bootstrap token: the hypershift-operator
// issues it in the control-plane namespace, the control-plane-operator
// installs it in the hosted cluster, and, for platform None, the
// hypershift-operator publishes the bootstrap kubeconfig beside the
// NodePool for the user's machines.
const (
	// NodePoolLabel names, on a token Secret (and on a pool's nodes), the
	// NodePool it belongs to.
	NodePoolLabel = "hypershift.openshift.io/nodePool"
	// ControlPlaneComponentLabel marks the objects of a control-plane
	// namespace the control-plane-operator watches (it caches Secrets with
	// this label only): its components', and the NodePools' tokens.
	ControlPlaneComponentLabel = "hypershift.openshift.io/control-plane-component"
	// KubeAPIServerComponent is the kube-apiserver's value of
	// ControlPlaneComponentLabel, and KubeAPIServerPort the port its pods
	// serve on: the hypershift-operator's NetworkPolicies select them.
	KubeAPIServerComponent = "kube-apiserver"
	KubeAPIServerPort      = 6443
	// NodePoolConfigAnnotation names, on a token Secret (and on the
	// bootstrap token installed from it), the pool config the token is for
	// (its release and kubelet configuration): a token of an earlier
	// config is revoked, one of the same config kept until it expires.
	NodePoolConfigAnnotation = "hypershift.openshift.io/nodePoolConfig"
	// NodePoolTokenComponent is the ControlPlaneComponentLabel value of the
	// token Secrets.
	NodePoolTokenComponent = "node-bootstrap-token"
	// BootstrapKubeconfigKey holds, in a NodePool's join Secret, the
	// kubeconfig a kubelet joins with (--bootstrap-kubeconfig).
	BootstrapKubeconfigKey = "bootstrap.kubeconfig"
	// CACertKey holds, in a NodePool's join Secret, the hosted cluster's
	// CA: what the kubelet verifies the kube-apiserver with, and the
	// client CA of the kubelet's own API.
	CACertKey = "ca.crt"
	// KubeletConfigKey holds, in a NodePool's join Secret, the hosted
	// cluster's part of the kubelet's configuration (a
	// KubeletConfiguration drop-in, --config-dir): its DNS address and
	// domain, who may call the kubelet, and certificates by TLS bootstrap.
	// Its one path, clientCAFile, names CACertKey beside it.
	KubeletConfigKey = "kubelet.conf"
)

// NodePoolTokenSecretName names the Secret, in the control-plane
// namespace, that holds NodePool pool's current bootstrap token.
func NodePoolTokenSecretName(pool string) string { return "token-" + pool }

// NodePoolJoinSecretName names the Secret, in the NodePool's namespace,
// that holds what a machine of platform None needs to join.
func NodePoolJoinSecretName(pool string) string { return pool + "-join" }

// PodNetworkNodeLabel marks, on a Node, a machine that joins the hosted
// cluster's own pod network (VXLAN between machines, masquerade out of it):
// the machines of platform Pod register with it set to "true", and the
// pod network's DaemonSet, which the control-plane-operator installs in
// the hosted cluster, runs on such Nodes only.
const PodNetworkNodeLabel = "hypershift.openshift.io/pod-network"

// PodNetworkAgentLabel marks, on a Node of platform Pod, a machine that
// runs its part of the pod network in its own init, set to
// PodNetworkAgentInMachine: the pod network's DaemonSet, kept for the
// machines made before, does not run there.
const PodNetworkAgentLabel = "hypershift.openshift.io/pod-network-agent"

// PodNetworkAgentInMachine is PodNetworkAgentLabel's value.
const PodNetworkAgentInMachine = "machine"

// PodNetworkRange is the range the pod network of the machines of platform
// Pod gives pod addresses from: the first IPv4 cluster network (that pod
// network is IPv4 only).
func (n ClusterNetworking) PodNetworkRange() (netip.Prefix, error) {
	for _, c := range n.ClusterNetwork {
		if p, err := netip.ParsePrefix(c.CIDR); err == nil && p.Addr().Is4() {
			return p.Masked(), nil
		}
	}
	return netip.Prefix{}, errors.New("the hosted cluster has no IPv4 cluster network: the pod network of machines of platform Pod is IPv4 only")
}
