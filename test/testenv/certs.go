package testenv

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// The files of the API server's certificate directory, as envtest names
// them, plus the CA's own pair.
const (
	caCertFile      = "ca.crt"
	caKeyFile       = "ca.key"
	servingCertFile = "apiserver.crt"
	servingKeyFile  = "apiserver.key"
	saKeyFile       = "sa-signer.key"
	saPublicFile    = "sa-signer.crt"
)

// useOwnCertificates gives the API server certificates of the
// environment's own instead of envtest's: a CA, kept in dir with the
// ServiceAccount signing key so that a later run with the same dir trusts
// and accepts what this one issued, and a serving certificate that also
// names extraIPs (the `kubernetes` Service's ClusterIP, for in-cluster
// clients).
func useOwnCertificates(env *envtest.Environment, dir string, extraIPs []string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("failed to create %s: %w", dir, err)
	}
	ca, err := loadOrCreateCA(dir)
	if err != nil {
		return err
	}
	if err := ensureServiceAccountKey(dir); err != nil {
		return err
	}
	servingCert, servingKey, err := ca.Issue("kube-apiserver", append([]string{"localhost", "127.0.0.1"}, extraIPs...))
	if err != nil {
		return err
	}
	if err := writeFiles(dir, map[string][]byte{servingCertFile: servingCert, servingKeyFile: servingKey}); err != nil {
		return err
	}
	apiServer := env.ControlPlane.GetAPIServer()
	apiServer.CertDir = dir
	// envtest keeps the certificates it finds and trusts this CA; its
	// clients' certificates are the CA's too.
	apiServer.CA = ca.CertPEM()
	apiServer.Authn = &caAuthn{ca: ca}
	return nil
}

func loadOrCreateCA(dir string) (*CA, error) {
	certPEM, certErr := os.ReadFile(filepath.Join(dir, caCertFile))
	keyPEM, keyErr := os.ReadFile(filepath.Join(dir, caKeyFile))
	if certErr == nil && keyErr == nil {
		return LoadCA(certPEM, keyPEM)
	}
	if !errors.Is(certErr, os.ErrNotExist) && certErr != nil {
		return nil, fmt.Errorf("failed to read the CA: %w", certErr)
	}
	ca, err := NewCA("local-cluster-ca")
	if err != nil {
		return nil, err
	}
	keyPEM, err = ca.KeyPEM()
	if err != nil {
		return nil, err
	}
	return ca, writeFiles(dir, map[string][]byte{caCertFile: ca.CertPEM(), caKeyFile: keyPEM})
}

func ensureServiceAccountKey(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, saKeyFile)); err == nil {
		return nil
	}
	private, public, err := NewServiceAccountKey()
	if err != nil {
		return err
	}
	return writeFiles(dir, map[string][]byte{saKeyFile: private, saPublicFile: public})
}

func writeFiles(dir string, files map[string][]byte) error {
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return fmt.Errorf("failed to write %s: %w", name, err)
		}
	}
	return nil
}

// kubernetesServiceIP returns the ClusterIP the API server gives the
// `kubernetes` Service: the first address of the range.
func kubernetesServiceIP(serviceRange string) (string, error) {
	prefix, err := netip.ParsePrefix(serviceRange)
	if err != nil {
		return "", fmt.Errorf("service range %q: %w", serviceRange, err)
	}
	return prefix.Masked().Addr().Next().String(), nil
}

// useKubeletClientCertificate issues, with the CA in dir, the client
// certificate the API server presents to kubelets, and sets the flags.
func useKubeletClientCertificate(env *envtest.Environment, dir string) error {
	ca, err := loadOrCreateCA(dir)
	if err != nil {
		return err
	}
	certPEM, keyPEM, err := ca.Issue(KubeletClientUser, nil)
	if err != nil {
		return err
	}
	files := map[string][]byte{"kubelet-client.crt": certPEM, "kubelet-client.key": keyPEM}
	if err := writeFiles(dir, files); err != nil {
		return err
	}
	args := env.ControlPlane.GetAPIServer().Configure()
	args.Set("kubelet-client-certificate", filepath.Join(dir, "kubelet-client.crt"))
	args.Set("kubelet-client-key", filepath.Join(dir, "kubelet-client.key"))
	// Nodes are reached at their address, never by a name to look up.
	args.Set("kubelet-preferred-address-types", "InternalIP")
	return nil
}
