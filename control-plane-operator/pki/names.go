package pki

import (
	"slices"
	"time"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
)

// Names of the Secrets in the control-plane namespace. They are contracts:
// the components mount them by these names.
const (
	// RootCASecret holds the root CA (CAKey, CACertKey).
	RootCASecret = "root-ca"
	// EtcdSignerSecret holds the CA of etcd's certificates.
	EtcdSignerSecret = "etcd-signer"
	// EtcdServerSecret holds etcd's serving certificate.
	EtcdServerSecret = "etcd-server-tls"
	// EtcdPeerSecret holds the certificate etcd members present to each
	// other, as servers and as clients.
	EtcdPeerSecret = "etcd-peer-tls"
	// EtcdClientSecret holds kube-apiserver's client certificate for etcd.
	EtcdClientSecret = "etcd-client-tls"
	// KubeAPIServerSecret holds kube-apiserver's serving certificate.
	KubeAPIServerSecret = "kas-server-tls"
	// ServiceAccountKeySecret holds the key pair that signs the hosted
	// cluster's service-account tokens.
	ServiceAccountKeySecret = "sa-signing-key"
	// AdminKubeconfigSecret holds a system:masters kubeconfig that reaches
	// the kube-apiserver at its published endpoint.
	AdminKubeconfigSecret = hyperv1.AdminKubeconfigSecretName
	// KubeControllerManagerKubeconfigSecret holds kube-controller-manager's
	// kubeconfig.
	KubeControllerManagerKubeconfigSecret = "kube-controller-manager-kubeconfig"
	// KubeSchedulerKubeconfigSecret holds kube-scheduler's kubeconfig.
	KubeSchedulerKubeconfigSecret = "kube-scheduler-kubeconfig"
	// KubeletClientSecret holds the client certificate kube-apiserver
	// presents to kubelets (logs, exec, port-forward).
	KubeletClientSecret = "kas-kubelet-client-tls"
	// HostedClusterConfigKubeconfigSecret holds the kubeconfig the
	// control-plane-operator configures the hosted cluster with (what its
	// nodes need: bootstrap RBAC, kube-proxy, CoreDNS), over the internal
	// URL.
	HostedClusterConfigKubeconfigSecret = "hosted-cluster-config-kubeconfig"
)

// cluster-api's kubeconfig of a cluster: its Secret's name, key and label
// are cluster-api's contract (its ClusterCache reads the workload cluster's
// kubeconfig from <cluster>-kubeconfig, key value, and caches only Secrets
// with the cluster-name label).
const (
	// ClusterAPIKubeconfigKey holds the kubeconfig.
	ClusterAPIKubeconfigKey = "value"
	// ClusterAPIClusterNameLabel names, on the Secret, its cluster-api Cluster.
	ClusterAPIClusterNameLabel = "cluster.x-k8s.io/cluster-name"
)

// PodNetworkKubeconfigSecret holds the kubeconfig of the pod network that
// each machine of platform Pod runs (PodNetworkUser, at the published
// endpoint); the machines' Pods mount it.
const PodNetworkKubeconfigSecret = "pod-network-kubeconfig"

// ClusterAPIWebhookSecret holds the serving certificate of the cluster-api
// manager's webhook server (tls.crt, tls.key: its default file names).
const ClusterAPIWebhookSecret = hyperv1.ClusterAPIWebhookSecretName

// ClusterAPIKubeconfigSecret names the Secret of cluster-api's kubeconfig
// of its Cluster cluster: the cluster-api manager drains and deletes the
// hosted cluster's Nodes with it.
func ClusterAPIKubeconfigSecret(cluster string) string { return cluster + "-kubeconfig" }

// Keys of the Secrets' data.
const (
	// CACertKey holds a PEM CA certificate: in a CA Secret, its own; in a
	// certificate Secret, the CA that signed it.
	CACertKey = "ca.crt"
	// CAKeyKey holds a CA's PEM private key.
	CAKeyKey = "ca.key"
	// TLSCertKey holds a PEM leaf certificate (corev1.TLSCertKey).
	TLSCertKey = "tls.crt"
	// TLSKeyKey holds a leaf certificate's PEM private key
	// (corev1.TLSPrivateKeyKey).
	TLSKeyKey = "tls.key"
	// ServiceAccountPrivateKeyKey holds the service-account signing key.
	ServiceAccountPrivateKeyKey = "service-account.key"
	// ServiceAccountPublicKeyKey holds its public key.
	ServiceAccountPublicKeyKey = "service-account.pub"
	// KubeconfigKey holds a kubeconfig with its credentials inline.
	KubeconfigKey = hyperv1.KubeconfigKey
)

// Lifetimes.
const (
	// CAValidity is how long a CA is valid.
	CAValidity = 10 * 365 * 24 * time.Hour
	// LeafValidity is how long a leaf certificate is valid. It is re-issued
	// once two thirds of it have passed.
	LeafValidity = 365 * 24 * time.Hour
	// backdate is how far before now a certificate becomes valid, so that
	// a clock slightly behind ours accepts it.
	backdate = 5 * time.Minute
)

// CASecrets are the Secrets that hold a CA: never replaced once they exist.
var CASecrets = []string{RootCASecret, EtcdSignerSecret}

// SecretNames are every Secret Plan may write for in, in the order it
// plans them.
// The user's encryption key Secrets are among them: Plan reads them, and
// never writes them.
func SecretNames(in Inputs) []string {
	names := append(slices.Clone(Secrets), in.EncryptionKeys...)
	if in.RestoredKeys != "" {
		names = append(names, in.RestoredKeys)
	}
	if in.ClusterAPICluster == "" {
		return names
	}
	return append(names, ClusterAPIWebhookSecret, ClusterAPIKubeconfigSecret(in.ClusterAPICluster), PodNetworkKubeconfigSecret)
}

// Secrets are the Secrets Plan writes for every control plane, in the
// order it plans them.
var Secrets = []string{
	RootCASecret, EtcdSignerSecret, EtcdServerSecret, EtcdPeerSecret, EtcdClientSecret,
	KubeAPIServerSecret, ServiceAccountKeySecret, EncryptionKeySecret, EncryptionConfigSecret, KubeControllerManagerKubeconfigSecret,
	KubeSchedulerKubeconfigSecret, KubeletClientSecret, HostedClusterConfigKubeconfigSecret, AdminKubeconfigSecret,
}
