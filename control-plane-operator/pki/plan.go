package pki

import (
	"bytes"
	"crypto/x509"
	"fmt"
	"maps"
	"net"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Subjects of the client certificates.
const (
	// KubeControllerManagerUser is kube-controller-manager's user name: the
	// hosted cluster's default RBAC binds it.
	KubeControllerManagerUser = "system:kube-controller-manager"
	// KubeSchedulerUser is kube-scheduler's user name.
	KubeSchedulerUser = "system:kube-scheduler"
	// AdminUser is the administrator's user name.
	AdminUser = "system:admin"
	// MastersGroup is the group the hosted cluster's RBAC lets do anything.
	MastersGroup = "system:masters"
	// EtcdClientUser is kube-apiserver's name towards etcd.
	EtcdClientUser = "kube-apiserver-etcd-client"
	// EtcdPeerUser is the name etcd members present to each other: the
	// only name a member accepts from a peer.
	EtcdPeerUser = "etcd-peer"
	// KubeletClientUser is kube-apiserver's name towards kubelets: the
	// hosted cluster's RBAC binds it to system:kubelet-api-admin, nothing
	// more.
	KubeletClientUser = "kube-apiserver-kubelet-client"
	// HostedClusterConfigUser is the control-plane-operator's name in the
	// hosted cluster, where it installs what nodes need.
	HostedClusterConfigUser = "system:hypershift:hosted-cluster-config"
	// ClusterAPIUser is the cluster-api manager's name in the hosted
	// cluster, where it drains and deletes the Nodes of the machines it
	// removes: a ClusterRole of the hosted cluster grants just that.
	ClusterAPIUser = "system:hypershift:cluster-api"
	// PodNetworkUser is the name, in the hosted cluster, of the pod
	// network of the machines of platform Pod, which each machine runs:
	// a ClusterRole of the hosted cluster lets it read Nodes, nothing more
	// (a kubelet's own credential reads only its own Node).
	PodNetworkUser = "system:hypershift:pod-network"
)

// Names are the DNS names and IP addresses a certificate covers.
type Names struct {
	// DNSNames are host names.
	DNSNames []string
	// IPAddresses are addresses.
	IPAddresses []net.IP
}

// Inputs is everything the PKI of one control plane derives from.
type Inputs struct {
	// Namespace is the control-plane namespace the Secrets live in.
	Namespace string
	// Labels and Annotations go on every Secret.
	Labels, Annotations map[string]string
	// ClusterName names the cluster, user and context in kubeconfigs.
	ClusterName string
	// EtcdServer are the names etcd's clients reach it by.
	EtcdServer Names
	// EtcdPeer are the names etcd's members reach each other by.
	EtcdPeer Names
	// KubeAPIServer are the names kube-apiserver is reached by.
	KubeAPIServer Names
	// InternalURL reaches kube-apiserver from inside the management
	// cluster; the controller manager's and scheduler's kubeconfigs use it.
	InternalURL string
	// ExternalURL reaches kube-apiserver at its published endpoint; the
	// administrator's kubeconfig uses it. While it is empty, that kubeconfig
	// is neither issued nor changed.
	ExternalURL string
	// ClusterAPICluster names the cluster-api Cluster of a control plane
	// whose NodePools' machines cluster-api runs (platform Pod): its
	// kubeconfig is issued, over the internal URL. None when empty.
	ClusterAPICluster string
	// EncryptionKeys name the Secrets, in Namespace, of the user's aescbc
	// keys (spec.secretEncryption's copies): the active one first. When
	// there are none, the generated key (EncryptionKeySecret) is active.
	EncryptionKeys []string
	// StoredWith names (EncryptionKeyName) the key every Secret of the
	// hosted cluster was last rewritten with: a configuration without it
	// would leave Secrets nobody can read, and is refused. Empty: none
	// known yet.
	StoredWith string
	// RestoredKeys names the Secret, in Namespace, holding the
	// EncryptionConfiguration of the backup a cluster's etcd was restored
	// from (hyperv1.EtcdRestoreEncryptionConfigSecret): its aescbc keys
	// read the restored Secrets, after every other key. None when empty.
	RestoredKeys string
}

// Cause classifies why a Secret is written.
type Cause string

const (
	// Missing means the Secret did not exist.
	Missing Cause = "Missing"
	// Due means a certificate passed two thirds of its lifetime.
	Due Cause = "Due"
	// Changed means what a certificate or kubeconfig must say changed (names,
	// subject, usages, server).
	Changed Cause = "Changed"
	// Damaged means the Secret was found broken: it does not parse, its key
	// does not match, it is not signed by its CA, or it is not valid now.
	Damaged Cause = "Damaged"
)

// Write is a Secret whose content Plan changes, and why.
type Write struct {
	// Secret is the Secret's name.
	Secret string
	// Reason says why, e.g. "its certificate is past two thirds of its
	// lifetime".
	Reason string
	// Cause classifies the reason.
	Cause Cause
}

// Result is what Plan decided.
type Result struct {
	// Secrets are the desired Secrets, complete and in a fixed order. A
	// Secret that is kept carries exactly the bytes it holds.
	Secrets []*corev1.Secret
	// Writes lists the Secrets whose content changes, in the same order.
	Writes []Write
	// RenewAt is the earliest time a certificate falls due; Plan must run
	// again by then.
	RenewAt time.Time
	// EncryptionActiveKey is the name, in the encryption configuration,
	// of the key Secrets are written with (EncryptionKeyName).
	EncryptionActiveKey string
}

// CAError says that a CA Secret exists but holds no usable CA. Plan never
// replaces a CA: a human must restore or delete the Secret.
type CAError struct {
	// Secret names the CA Secret.
	Secret string
	// Err says what is wrong with it.
	Err error
}

func (e *CAError) Error() string {
	return fmt.Sprintf("Secret %s holds no usable CA (%v); a CA is never replaced: restore the Secret, or delete it to have a new CA issued and every certificate it signed re-issued", e.Secret, e.Err)
}

func (e *CAError) Unwrap() error { return e.Err }

// Plan decides every Secret of the PKI from the live Secrets (by name;
// missing ones absent or nil) at now. It fails with a *CAError when a CA
// Secret holds no usable CA, and then decides nothing.
func Plan(in Inputs, live map[string]*corev1.Secret, now time.Time) (*Result, error) {
	p := &planner{in: in, live: live, now: now, result: &Result{}}
	root, err := p.ca(RootCASecret, "root-ca")
	if err != nil {
		return nil, err
	}
	etcd, err := p.ca(EtcdSignerSecret, "etcd-signer")
	if err != nil {
		return nil, err
	}
	serverAndClient := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	server := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	client := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	steps := []func() error{
		func() error {
			return p.leaf(EtcdServerSecret, etcd, names("etcd-server", nil, in.EtcdServer, serverAndClient))
		},
		func() error {
			return p.leaf(EtcdPeerSecret, etcd, names(EtcdPeerUser, nil, in.EtcdPeer, serverAndClient))
		},
		func() error { return p.leaf(EtcdClientSecret, etcd, names(EtcdClientUser, nil, Names{}, client)) },
		func() error {
			return p.leaf(KubeAPIServerSecret, root, names("kube-apiserver", nil, in.KubeAPIServer, server))
		},
		p.serviceAccountKeys,
		p.encryption,
		func() error {
			return p.kubeconfig(KubeControllerManagerKubeconfigSecret, root, names(KubeControllerManagerUser, nil, Names{}, client), in.InternalURL)
		},
		func() error {
			return p.kubeconfig(KubeSchedulerKubeconfigSecret, root, names(KubeSchedulerUser, nil, Names{}, client), in.InternalURL)
		},
		func() error { return p.leaf(KubeletClientSecret, root, names(KubeletClientUser, nil, Names{}, client)) },
		func() error {
			return p.kubeconfig(HostedClusterConfigKubeconfigSecret, root, names(HostedClusterConfigUser, []string{MastersGroup}, Names{}, client), in.InternalURL)
		},
		func() error {
			if in.ExternalURL == "" {
				return nil
			}
			return p.kubeconfig(AdminKubeconfigSecret, root, names(AdminUser, []string{MastersGroup}, Names{}, client), in.ExternalURL)
		},
		func() error {
			if in.ClusterAPICluster == "" {
				return nil
			}
			return p.leaf(ClusterAPIWebhookSecret, root, names("cluster-api-webhook", nil, Names{DNSNames: []string{"localhost"}}, server))
		},
		func() error {
			if in.ClusterAPICluster == "" {
				return nil
			}
			return p.kubeconfigAt(kubeconfigSecret{
				name: ClusterAPIKubeconfigSecret(in.ClusterAPICluster), key: ClusterAPIKubeconfigKey,
				labels: map[string]string{ClusterAPIClusterNameLabel: in.ClusterAPICluster},
			}, root, names(ClusterAPIUser, nil, Names{}, client), in.InternalURL)
		},
		func() error {
			// The machines reach the kube-apiserver where their kubelets
			// do: at its published endpoint.
			if in.ClusterAPICluster == "" || in.ExternalURL == "" {
				return nil
			}
			return p.kubeconfig(PodNetworkKubeconfigSecret, root, names(PodNetworkUser, nil, Names{}, client), in.ExternalURL)
		},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	return p.result, nil
}

func names(commonName string, organization []string, n Names, usages []x509.ExtKeyUsage) certSpec {
	return certSpec{CommonName: commonName, Organization: organization, DNSNames: n.DNSNames, IPAddresses: n.IPAddresses, Usages: usages}
}

// planner carries one Plan's state.
type planner struct {
	in     Inputs
	live   map[string]*corev1.Secret
	now    time.Time
	result *Result
}

// ca keeps a usable CA, issues a missing one, and refuses to touch a
// broken one.
func (p *planner) ca(name, commonName string) (*CA, error) {
	if s := p.live[name]; s != nil {
		ca, err := parseCA(s.Data[CACertKey], s.Data[CAKeyKey])
		if err == nil && !p.now.Before(ca.Cert.NotAfter) {
			err = fmt.Errorf("it expired at %s", ca.Cert.NotAfter.UTC().Format(time.RFC3339))
		}
		if err != nil {
			return nil, &CAError{Secret: name, Err: err}
		}
		p.add(name, corev1.SecretTypeOpaque, map[string][]byte{CACertKey: s.Data[CACertKey], CAKeyKey: s.Data[CAKeyKey]}, nil)
		return ca, nil
	}
	kp, err := issueCA(commonName, p.now)
	if err != nil {
		return nil, err
	}
	ca, err := parseCA(kp.certPEM, kp.keyPEM)
	if err != nil {
		return nil, fmt.Errorf("failed to read back the CA just issued: %w", err)
	}
	p.add(name, corev1.SecretTypeOpaque, map[string][]byte{CACertKey: kp.certPEM, CAKeyKey: kp.keyPEM}, &Write{Reason: reasonMissing, Cause: Missing})
	return ca, nil
}

// leaf keeps a certificate Secret that is still right and re-issues it
// otherwise.
func (p *planner) leaf(name string, ca *CA, spec certSpec) error {
	var certPEM, keyPEM, caPEM []byte
	s := p.live[name]
	if s != nil {
		certPEM, keyPEM, caPEM = s.Data[TLSCertKey], s.Data[TLSKeyKey], s.Data[CACertKey]
	}
	write, certPEM, keyPEM, err := p.certificate(s != nil, certPEM, keyPEM, spec, ca)
	if err != nil {
		return fmt.Errorf("failed to issue %s: %w", name, err)
	}
	if write == nil && !bytes.Equal(caPEM, ca.CertPEM) {
		write = &Write{Reason: reasonCAOutdated, Cause: Damaged}
	}
	p.add(name, corev1.SecretTypeTLS, map[string][]byte{TLSCertKey: certPEM, TLSKeyKey: keyPEM, CACertKey: ca.CertPEM}, write)
	return nil
}

// kubeconfigSecret is where a kubeconfig is kept: the Secret's name, the
// key that holds it, and labels beside the PKI's.
type kubeconfigSecret struct {
	name, key string
	labels    map[string]string
}

// kubeconfig keeps a kubeconfig Secret that is still right, and rewrites
// it otherwise, re-issuing its certificate only when that is due.
func (p *planner) kubeconfig(name string, ca *CA, spec certSpec, server string) error {
	return p.kubeconfigAt(kubeconfigSecret{name: name, key: KubeconfigKey}, ca, spec, server)
}

// kubeconfigAt is kubeconfig, kept in at.
func (p *planner) kubeconfigAt(at kubeconfigSecret, ca *CA, spec certSpec, server string) error {
	name := at.name
	var raw []byte
	var content kubeconfigContent
	var decodeErr error
	s := p.live[name]
	if s != nil {
		raw = s.Data[at.key]
		content, decodeErr = decodeKubeconfig(raw)
	}
	write, certPEM, keyPEM, err := p.certificate(s != nil, content.certPEM, content.keyPEM, spec, ca)
	if err != nil {
		return fmt.Errorf("failed to issue %s: %w", name, err)
	}
	switch {
	case decodeErr != nil:
		write.Reason = reasonKubeconfigInvalid
	case write != nil:
	case content.server != server:
		write = &Write{Reason: reasonServer, Cause: Changed}
	case !bytes.Equal(content.caPEM, ca.CertPEM):
		write = &Write{Reason: reasonCAOutdated, Cause: Damaged}
	}
	if write != nil {
		raw, err = encodeKubeconfig(p.in.ClusterName, kubeconfigContent{server: server, caPEM: ca.CertPEM, certPEM: certPEM, keyPEM: keyPEM})
		if err != nil {
			return err
		}
	}
	p.add(name, corev1.SecretTypeOpaque, map[string][]byte{at.key: raw}, write)
	maps.Copy(p.result.Secrets[len(p.result.Secrets)-1].Labels, at.labels)
	return nil
}

// certificate returns the certificate and key to store: the given ones
// when they are still right, new ones with the reason otherwise. It keeps
// track of the earliest renewal.
func (p *planner) certificate(exists bool, certPEM, keyPEM []byte, spec certSpec, ca *CA) (*Write, []byte, []byte, error) {
	reason, cause := reasonMissing, Missing
	if exists {
		if reason, cause = checkLeaf(certPEM, keyPEM, spec, ca, p.now); reason == reasonMissing {
			reason, cause = reasonCertInvalid, Damaged
		}
	}
	var write *Write
	if reason != "" {
		kp, err := issueLeaf(spec, ca, p.now)
		if err != nil {
			return nil, nil, nil, err
		}
		certPEM, keyPEM, write = kp.certPEM, kp.keyPEM, &Write{Reason: reason, Cause: cause}
	}
	if cert, err := parseCert(certPEM); err == nil {
		if at := RenewalTime(cert); p.result.RenewAt.IsZero() || at.Before(p.result.RenewAt) {
			p.result.RenewAt = at
		}
	}
	return write, certPEM, keyPEM, nil
}

// add appends a desired Secret, and the write when its content changes.
func (p *planner) add(name string, secretType corev1.SecretType, data map[string][]byte, write *Write) {
	p.result.Secrets = append(p.result.Secrets, &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   p.in.Namespace,
			Name:        name,
			Labels:      maps.Clone(p.in.Labels),
			Annotations: maps.Clone(p.in.Annotations),
		},
		Type: secretType,
		Data: data,
	})
	if write != nil {
		write.Secret = name
		p.result.Writes = append(p.result.Writes, *write)
	}
}
