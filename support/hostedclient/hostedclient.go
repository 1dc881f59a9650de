// Package hostedclient makes clients of a hosted cluster from the
// kubeconfigs the control plane's PKI issues.
package hostedclient

import (
	"fmt"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hypershift-le/hypershift/support/scheme"
)

// New returns a client of the hosted cluster kubeconfig reaches, each
// request bounded by timeout; secret names the Secret the kubeconfig
// came from, for the error.
func New(kubeconfig []byte, timeout time.Duration, secret string) (client.Client, error) {
	config, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("secret %s holds no usable kubeconfig: %w", secret, err)
	}
	config.Timeout = timeout
	c, err := client.New(config, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, fmt.Errorf("failed to make a client of the hosted cluster: %w", err)
	}
	return c, nil
}
