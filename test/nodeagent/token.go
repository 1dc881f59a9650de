package nodeagent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
)

// tokenLifetime is what the agent asks for; the token is renewed once 80%
// of it passed.
const tokenLifetime = time.Hour

// tokenManager keeps a kubeconfig holding a ServiceAccount token bound to
// one pod, so that the token dies with the pod.
type tokenManager struct {
	agent          *Agent
	namespace      string
	podName        string
	podUID         types.UID
	serviceAccount string
	path           string

	mu         sync.Mutex
	refreshAt  time.Time
	refreshing bool
}

// ensure writes the kubeconfig unless it holds a token that needs no
// renewal yet, and keeps it renewed until ctx ends: when the pod stops. The
// token then still has at least a fifth of its lifetime, for the
// processes' last calls during their grace period.
func (t *tokenManager) ensure(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.refreshAt.IsZero() && time.Now().Before(t.refreshAt) {
		return nil
	}
	if err := t.renewLocked(ctx); err != nil {
		return err
	}
	if !t.refreshing {
		t.refreshing = true
		go t.keepRenewed(ctx)
	}
	return nil
}

func (t *tokenManager) renewLocked(ctx context.Context) error {
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To(int64(tokenLifetime / time.Second)),
		BoundObjectRef:    &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: t.podName, UID: t.podUID},
	}}
	issued := time.Now()
	resp, err := t.agent.client.CoreV1().ServiceAccounts(t.namespace).CreateToken(ctx, t.serviceAccount, req, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("failed to request a token for service account %s/%s: %w", t.namespace, t.serviceAccount, err)
	}
	if err := t.write(resp.Status.Token); err != nil {
		return err
	}
	lifetime := resp.Status.ExpirationTimestamp.Sub(issued)
	if lifetime <= 0 {
		lifetime = tokenLifetime
	}
	t.refreshAt = issued.Add(lifetime * 8 / 10)
	return nil
}

// keepRenewed renews the token when due, until ctx ends; a failed renewal
// is tried again in 10s.
func (t *tokenManager) keepRenewed(ctx context.Context) {
	for {
		t.mu.Lock()
		wait := time.Until(t.refreshAt)
		t.mu.Unlock()
		timer := time.NewTimer(max(wait, 0))
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
		t.mu.Lock()
		if !time.Now().Before(t.refreshAt) {
			if err := t.renewLocked(ctx); err != nil && ctx.Err() == nil {
				t.agent.log.Error(err, "failed to renew a token", "pod", t.namespace+"/"+t.podName)
				t.refreshAt = time.Now().Add(10 * time.Second)
			}
		}
		t.mu.Unlock()
	}
}

// write replaces the kubeconfig atomically: the API server, its CA and the
// token, and nothing of the agent's own credentials.
func (t *tokenManager) write(token string) error {
	rc := t.agent.cfg.RESTConfig
	cluster := &clientcmdapi.Cluster{
		Server:                   rc.Host,
		CertificateAuthorityData: rc.CAData,
		CertificateAuthority:     rc.CAFile,
		TLSServerName:            rc.ServerName,
		InsecureSkipTLSVerify:    rc.Insecure,
	}
	if len(cluster.CertificateAuthorityData) > 0 {
		cluster.CertificateAuthority = ""
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["cluster"] = cluster
	cfg.AuthInfos["serviceaccount"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["serviceaccount"] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: "serviceaccount", Namespace: t.namespace}
	cfg.CurrentContext = "serviceaccount"
	raw, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("failed to render a kubeconfig: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(t.path), ".kubeconfig-*")
	if err != nil {
		return fmt.Errorf("failed to write the kubeconfig: %w", err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	// CreateTemp creates the file with mode 0600.
	if _, err := tmp.Write(raw); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("failed to write the kubeconfig: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("failed to write the kubeconfig: %w", err)
	}
	if err := os.Rename(tmp.Name(), t.path); err != nil {
		return fmt.Errorf("failed to write the kubeconfig: %w", err)
	}
	return nil
}
