package csrapproval

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"net/url"
	"strings"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var node = &corev1.Node{
	ObjectMeta: metav1.ObjectMeta{Name: "node-0"},
	Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: "198.18.0.11"},
		{Type: corev1.NodeHostName, Address: "node-0"},
	}},
}

// request is a kubelet's serving request for node-0 as the kubelet
// makes it; change edits it first.
func request(t *testing.T, change func(*x509.CertificateRequest, *certificatesv1.CertificateSigningRequestSpec)) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	template := &x509.CertificateRequest{
		Subject:     pkix.Name{CommonName: "system:node:node-0", Organization: []string{"system:nodes"}},
		DNSNames:    []string{"node-0"},
		IPAddresses: []net.IP{net.ParseIP("198.18.0.11")},
	}
	spec := certificatesv1.CertificateSigningRequestSpec{
		SignerName: certificatesv1.KubeletServingSignerName,
		Username:   "system:node:node-0",
		Groups:     []string{"system:nodes", "system:authenticated"},
		Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth},
	}
	if change != nil {
		change(template, &spec)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, template, key)
	if err != nil {
		t.Fatal(err)
	}
	if spec.Request == nil {
		spec.Request = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
	}
	return &certificatesv1.CertificateSigningRequest{Spec: spec}
}

func TestKubeletServing(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*x509.CertificateRequest, *certificatesv1.CertificateSigningRequestSpec)
		// refused is part of the reason, "" when approved.
		refused string
	}{
		{name: "the kubelet's own request", refused: ""},
		{name: "only its IP address", change: func(r *x509.CertificateRequest, _ *certificatesv1.CertificateSigningRequestSpec) { r.DNSNames = nil }},
		{name: "another signer", refused: "signer", change: func(_ *x509.CertificateRequest, s *certificatesv1.CertificateSigningRequestSpec) {
			s.SignerName = certificatesv1.KubeAPIServerClientKubeletSignerName
		}},
		{name: "another node's kubelet", refused: "not by node node-0's kubelet", change: func(_ *x509.CertificateRequest, s *certificatesv1.CertificateSigningRequestSpec) {
			s.Username = "system:node:node-1"
		}},
		{name: "a user outside system:nodes", refused: "not by node node-0's kubelet", change: func(_ *x509.CertificateRequest, s *certificatesv1.CertificateSigningRequestSpec) {
			s.Groups = []string{"system:authenticated"}
		}},
		{name: "client auth", refused: `usage "client auth"`, change: func(_ *x509.CertificateRequest, s *certificatesv1.CertificateSigningRequestSpec) {
			s.Usages = append(s.Usages, certificatesv1.UsageClientAuth)
		}},
		{name: "no server auth", refused: "lack", change: func(_ *x509.CertificateRequest, s *certificatesv1.CertificateSigningRequestSpec) {
			s.Usages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature}
		}},
		{name: "another subject", refused: "subject", change: func(r *x509.CertificateRequest, _ *certificatesv1.CertificateSigningRequestSpec) {
			r.Subject.CommonName = "system:node:node-1"
		}},
		{name: "a group more", refused: "subject", change: func(r *x509.CertificateRequest, _ *certificatesv1.CertificateSigningRequestSpec) {
			r.Subject.Organization = []string{"system:nodes", "system:masters"}
		}},
		{name: "a name the node does not have", refused: `DNS name "kubernetes.default"`, change: func(r *x509.CertificateRequest, _ *certificatesv1.CertificateSigningRequestSpec) {
			r.DNSNames = append(r.DNSNames, "kubernetes.default")
		}},
		{name: "an address the node does not have", refused: "IP address 198.18.0.1 ", change: func(r *x509.CertificateRequest, _ *certificatesv1.CertificateSigningRequestSpec) {
			r.IPAddresses = append(r.IPAddresses, net.ParseIP("198.18.0.1"))
		}},
		{name: "a URI", refused: "URIs", change: func(r *x509.CertificateRequest, _ *certificatesv1.CertificateSigningRequestSpec) {
			r.URIs = []*url.URL{{Scheme: "spiffe", Host: "cluster.local"}}
		}},
		{name: "nothing to serve at", refused: "no DNS name", change: func(r *x509.CertificateRequest, _ *certificatesv1.CertificateSigningRequestSpec) {
			r.DNSNames, r.IPAddresses = nil, nil
		}},
		{name: "not PEM", refused: "not a PEM-encoded", change: func(_ *x509.CertificateRequest, s *certificatesv1.CertificateSigningRequestSpec) {
			s.Request = []byte("garbage")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := KubeletServing(request(t, tc.change), node)
			switch {
			case tc.refused == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.refused != "" && err == nil:
				t.Errorf("approved, want refused for %q", tc.refused)
			case tc.refused != "" && !strings.Contains(err.Error(), tc.refused):
				t.Errorf("refused with %q, want a reason with %q", err, tc.refused)
			}
		})
	}
}

func TestNodeName(t *testing.T) {
	csr := request(t, nil)
	if got := NodeName(csr); got != "node-0" {
		t.Errorf("NodeName = %q, want node-0", got)
	}
	csr.Spec.SignerName = certificatesv1.KubeAPIServerClientKubeletSignerName
	if got := NodeName(csr); got != "" {
		t.Errorf("NodeName of a client request = %q, want none", got)
	}
}

func TestDecided(t *testing.T) {
	csr := request(t, nil)
	if Decided(csr) {
		t.Fatal("a new request reads as decided")
	}
	csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateFailed, Status: corev1.ConditionTrue}}
	if Decided(csr) {
		t.Error("a request that only failed reads as decided")
	}
	for _, kind := range []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied} {
		csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: kind, Status: corev1.ConditionTrue}}
		if !Decided(csr) {
			t.Errorf("a request with %s reads as undecided", kind)
		}
	}
}
