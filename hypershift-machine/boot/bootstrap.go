package boot

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/certificate/csr"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
)

// The kubelet's client credential, where the kubelet keeps it: its
// certificate store (cert-dir, prefix kubelet-client) and its kubeconfig.
var (
	kubeletCertDir     = filepath.Join(KubeletDir, "pki")
	kubeletClientPEM   = filepath.Join(kubeletCertDir, "kubelet-client-current.pem")
	kubeletKubeconfig  = filepath.Join(KubeletDir, "kubeconfig")
	bootstrapTimeout   = 5 * time.Minute
	kubeletClientUsage = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
)

// bootstrapKubelet does the kubelet's TLS bootstrap before the kubelet
// starts: with the pool's bootstrap token it asks for the Node's client
// certificate, waits for kube-controller-manager to issue it, and writes
// it where the kubelet keeps it, with a kubeconfig that uses it. A kubelet
// that bootstraps itself runs without a credential meanwhile: its list of
// Services is refused, it backs off (4, 7, 13 s), and until it has listed
// them it starts no pod of the node ("services have not yet been read at
// least once"), kube-proxy's first. The kubelet renews the certificate
// itself. A machine that restarts keeps a credential still valid.
func (m *machine) bootstrapKubelet(ctx context.Context) error {
	if pair, err := tls.LoadX509KeyPair(kubeletClientPEM, kubeletClientPEM); err == nil {
		if cert, err := x509.ParseCertificate(pair.Certificate[0]); err == nil && time.Now().Before(cert.NotAfter) {
			return nil
		}
	}
	bootstrap, err := clientcmd.BuildConfigFromFlags("", filepath.Join(JoinDir, hyperv1.BootstrapKubeconfigKey))
	if err != nil {
		return fmt.Errorf("the bootstrap kubeconfig: %w", err)
	}
	client, err := kubernetes.NewForConfig(bootstrap)
	if err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: "system:node:" + m.opts.Name, Organization: []string{"system:nodes"}},
	}, key)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, bootstrapTimeout)
	defer cancel()
	name, uid, err := csr.RequestCertificateWithContext(ctx, client, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
		"", certificatesv1.KubeAPIServerClientKubeletSignerName, nil, kubeletClientUsage, key)
	if err != nil {
		return fmt.Errorf("failed to ask for the kubelet's client certificate: %w", err)
	}
	certPEM, err := csr.WaitForCertificate(ctx, client, name, uid)
	if err != nil {
		return fmt.Errorf("the kubelet's client certificate (CertificateSigningRequest %s) was not issued: %w", name, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	pair := append(append([]byte{}, certPEM...), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})...)
	if err := writeClientPEM(pair); err != nil {
		return err
	}
	return writeKubeconfig(bootstrap.Host, bootstrap.CAData, bootstrap.CAFile)
}

// writeClientPEM writes the certificate and key as the kubelet's
// certificate store does: a dated file, and the current link to it.
func writeClientPEM(pair []byte) error {
	if err := os.MkdirAll(kubeletCertDir, 0o700); err != nil {
		return err
	}
	dated := filepath.Join(kubeletCertDir, "kubelet-client-"+time.Now().UTC().Format("2006-01-02-15-04-05")+".pem")
	if err := os.WriteFile(dated, pair, 0o600); err != nil {
		return err
	}
	link := kubeletClientPEM + ".tmp"
	_ = os.Remove(link)
	if err := os.Symlink(filepath.Base(dated), link); err != nil {
		return err
	}
	return os.Rename(link, kubeletClientPEM)
}

// writeKubeconfig writes the kubelet's kubeconfig: the kube-apiserver and
// CA of the bootstrap kubeconfig, the client certificate of its store.
func writeKubeconfig(server string, caData []byte, caFile string) error {
	config := clientcmdapi.NewConfig()
	config.Clusters["default-cluster"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caData, CertificateAuthority: caFile}
	config.AuthInfos["default-auth"] = &clientcmdapi.AuthInfo{ClientCertificate: kubeletClientPEM, ClientKey: kubeletClientPEM}
	config.Contexts["default-context"] = &clientcmdapi.Context{Cluster: "default-cluster", AuthInfo: "default-auth"}
	config.CurrentContext = "default-context"
	return clientcmd.WriteToFile(*config, kubeletKubeconfig)
}
