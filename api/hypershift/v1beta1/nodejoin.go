package v1beta1

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
