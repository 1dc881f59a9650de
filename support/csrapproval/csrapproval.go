// Package csrapproval decides whether a kubelet's request for a serving
// certificate may be approved: the rule an approver applies before the
// cluster's signer issues it (kube-controller-manager approves kubelets'
// client certificates by RBAC, but never their serving certificates,
// since only the one who knows the node's addresses can vouch for them).
//
// A request passes when it comes from the node it names, for exactly
// that node, with the usages of a TLS server, and for names and addresses
// the Node object reports; anything else is refused with the reason.
package csrapproval

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
)

// nodeUserPrefix and nodesGroup are how the API server names a kubelet.
const (
	nodeUserPrefix = "system:node:"
	nodesGroup     = "system:nodes"
)

// NodeName is the node a kubelet-serving request is for, by its requester,
// or "" when the request is not a kubelet's serving request.
func NodeName(csr *certificatesv1.CertificateSigningRequest) string {
	if csr.Spec.SignerName != certificatesv1.KubeletServingSignerName {
		return ""
	}
	name, ok := strings.CutPrefix(csr.Spec.Username, nodeUserPrefix)
	if !ok {
		return ""
	}
	return name
}

// KubeletServing returns nil when csr may be approved as node's serving
// certificate, and otherwise why not.
func KubeletServing(csr *certificatesv1.CertificateSigningRequest, node *corev1.Node) error {
	if csr.Spec.SignerName != certificatesv1.KubeletServingSignerName {
		return fmt.Errorf("signer %q is not %s", csr.Spec.SignerName, certificatesv1.KubeletServingSignerName)
	}
	user := nodeUserPrefix + node.Name
	if csr.Spec.Username != user || !slices.Contains(csr.Spec.Groups, nodesGroup) {
		return fmt.Errorf("requested by %q (groups %v), not by node %s's kubelet (%s in %s)", csr.Spec.Username, csr.Spec.Groups, node.Name, user, nodesGroup)
	}
	for _, u := range csr.Spec.Usages {
		if !slices.Contains(servingUsages, u) {
			return fmt.Errorf("usage %q is not one of a serving certificate's (%v)", u, servingUsages)
		}
	}
	if !slices.Contains(csr.Spec.Usages, certificatesv1.UsageServerAuth) {
		return fmt.Errorf("usages %v lack %q", csr.Spec.Usages, certificatesv1.UsageServerAuth)
	}
	req, err := parseRequest(csr.Spec.Request)
	if err != nil {
		return err
	}
	if req.Subject.CommonName != user || !slices.Equal(req.Subject.Organization, []string{nodesGroup}) {
		return fmt.Errorf("subject %q is not CN=%s, O=%s", req.Subject.String(), user, nodesGroup)
	}
	if len(req.EmailAddresses) > 0 || len(req.URIs) > 0 {
		return errors.New("it names e-mail addresses or URIs: a kubelet serves at names and IP addresses only")
	}
	if len(req.DNSNames)+len(req.IPAddresses) == 0 {
		return errors.New("it names no DNS name or IP address")
	}
	names, ips := nodeAddresses(node)
	for _, n := range req.DNSNames {
		if !slices.Contains(names, n) {
			return fmt.Errorf("DNS name %q is not one of node %s's (%v)", n, node.Name, names)
		}
	}
	for _, ip := range req.IPAddresses {
		if !slices.Contains(ips, ip.String()) {
			return fmt.Errorf("IP address %s is not one of node %s's (%v)", ip, node.Name, ips)
		}
	}
	return nil
}

// servingUsages are the key usages a kubelet's serving certificate may
// ask for.
var servingUsages = []certificatesv1.KeyUsage{
	certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageServerAuth,
}

func parseRequest(raw []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(raw)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("spec.request is not a PEM-encoded CERTIFICATE REQUEST")
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("spec.request: %w", err)
	}
	if err := req.CheckSignature(); err != nil {
		return nil, fmt.Errorf("spec.request is not signed by its own key: %w", err)
	}
	return req, nil
}

// nodeAddresses are the DNS names (its name, host names and DNS
// addresses) and IP addresses the Node reports.
func nodeAddresses(node *corev1.Node) (names, ips []string) {
	names = []string{node.Name}
	for _, a := range node.Status.Addresses {
		switch a.Type {
		case corev1.NodeHostName, corev1.NodeInternalDNS, corev1.NodeExternalDNS:
			names = append(names, a.Address)
		case corev1.NodeInternalIP, corev1.NodeExternalIP:
			if ip := net.ParseIP(a.Address); ip != nil {
				ips = append(ips, ip.String())
			}
		}
	}
	return names, ips
}

// Decided reports whether a request was approved or denied already: an
// approver leaves it alone then.
func Decided(csr *certificatesv1.CertificateSigningRequest) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == certificatesv1.CertificateApproved || c.Type == certificatesv1.CertificateDenied {
			return true
		}
	}
	return false
}

// bootstrapUserPrefix is how the API server names a bootstrap token's user:
// system:bootstrap:<token id>.
const bootstrapUserPrefix = "system:bootstrap:"

// BootstrapClient returns, for an approved kubelet client certificate
// request made with a bootstrap token (a machine's first join), the id of
// that token and the node the certificate names; ok is false for any
// other request, and for one not approved: only an approved request gave a
// machine its credential.
func BootstrapClient(csr *certificatesv1.CertificateSigningRequest) (tokenID, node string, ok bool) {
	if csr.Spec.SignerName != certificatesv1.KubeAPIServerClientKubeletSignerName {
		return "", "", false
	}
	tokenID, isToken := strings.CutPrefix(csr.Spec.Username, bootstrapUserPrefix)
	if !isToken || !Approved(csr) {
		return "", "", false
	}
	req, err := parseRequest(csr.Spec.Request)
	if err != nil {
		return "", "", false
	}
	node, isNode := strings.CutPrefix(req.Subject.CommonName, nodeUserPrefix)
	if !isNode || node == "" || !slices.Equal(req.Subject.Organization, []string{nodesGroup}) {
		return "", "", false
	}
	return tokenID, node, true
}

// Approved reports whether a request was approved and not denied.
func Approved(csr *certificatesv1.CertificateSigningRequest) bool {
	approved := false
	for _, c := range csr.Status.Conditions {
		switch {
		case c.Type == certificatesv1.CertificateDenied && c.Status == corev1.ConditionTrue:
			return false
		case c.Type == certificatesv1.CertificateApproved && c.Status == corev1.ConditionTrue:
			approved = true
		}
	}
	return approved
}
