package kubeapiserver

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// readyzTimeout bounds one /readyz request.
const readyzTimeout = 5 * time.Second

// Ready asks the kube-apiserver at url for /readyz, trusting only the CA
// in caPEM, without credentials: it answers anyone. It returns nil when the
// kube-apiserver says it is ready.
func Ready(ctx context.Context, url string, caPEM []byte) error {
	client, err := discovery.NewDiscoveryClientForConfig(&rest.Config{
		Host:            url,
		TLSClientConfig: rest.TLSClientConfig{CAData: caPEM},
		Timeout:         readyzTimeout,
	})
	if err != nil {
		return fmt.Errorf("failed to build a client for %s: %w", url, err)
	}
	body, err := client.RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("%s/readyz: %w", url, err)
	}
	if string(body) != "ok" {
		return fmt.Errorf("%s/readyz answered %q", url, body)
	}
	return nil
}
