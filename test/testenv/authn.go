package testenv

import (
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// caAuthn authenticates the API server's clients with certificates of the
// environment's own CA, where envtest would make a CA for clients only:
// what kube-controller-manager signs with that CA (nodes' client
// certificates) then authenticates too, and a kept state's users stay
// valid in the next run.
type caAuthn struct {
	ca *CA
}

var _ envtest.Authn = &caAuthn{}

// Configure writes the CA for the API server to trust its clients with.
func (a *caAuthn) Configure(workDir string, args *envtest.Arguments) error {
	path := filepath.Join(workDir, "client-ca.crt")
	if err := os.WriteFile(path, a.ca.CertPEM(), 0o600); err != nil {
		return err
	}
	args.Set("client-ca-file", path)
	return nil
}

func (a *caAuthn) Start() error { return nil }

func (a *caAuthn) Stop() error { return nil }

// AddUser returns base with a client certificate of user.
func (a *caAuthn) AddUser(user envtest.User, base *rest.Config) (*rest.Config, error) {
	certPEM, keyPEM, err := a.ca.Issue(user.Name, nil, user.Groups...)
	if err != nil {
		return nil, err
	}
	cfg := rest.CopyConfig(base)
	cfg.CertData, cfg.KeyData = certPEM, keyPEM
	return cfg, nil
}
