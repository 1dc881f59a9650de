package pki

import (
	"fmt"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// kubeconfigContent is what a kubeconfig says that this package decides.
type kubeconfigContent struct {
	server                 string
	caPEM, certPEM, keyPEM []byte
}

// encodeKubeconfig writes a kubeconfig with one cluster, one user and one
// context, all named name, with every credential inline: a process may
// read it where no other file it names would be found.
func encodeKubeconfig(name string, c kubeconfigContent) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: c.server, CertificateAuthorityData: c.caPEM}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificateData: c.certPEM, ClientKeyData: c.keyPEM}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	cfg.CurrentContext = name
	raw, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("failed to encode kubeconfig: %w", err)
	}
	return raw, nil
}

// decodeKubeconfig reads what the current context of a kubeconfig says.
func decodeKubeconfig(raw []byte) (kubeconfigContent, error) {
	cfg, err := clientcmd.Load(raw)
	if err != nil {
		return kubeconfigContent{}, fmt.Errorf("the kubeconfig does not parse: %w", err)
	}
	ctx, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok {
		return kubeconfigContent{}, fmt.Errorf("the kubeconfig has no current context")
	}
	cluster, user := cfg.Clusters[ctx.Cluster], cfg.AuthInfos[ctx.AuthInfo]
	if cluster == nil || user == nil {
		return kubeconfigContent{}, fmt.Errorf("the kubeconfig's context names a missing cluster or user")
	}
	return kubeconfigContent{
		server:  cluster.Server,
		caPEM:   cluster.CertificateAuthorityData,
		certPEM: user.ClientCertificateData,
		keyPEM:  user.ClientKeyData,
	}, nil
}
