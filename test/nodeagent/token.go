package nodeagent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
)

const (
	// tokenLifetime is what the agent asks for the kubeconfig's token.
	tokenLifetime = time.Hour
	// maxTokenAge: a token is renewed once 80% of its lifetime passed, and
	// at the latest after this, as the kubelet does.
	maxTokenAge = 24 * time.Hour
)

// boundToken is a ServiceAccount token bound to a pod, and when to renew it.
type boundToken struct {
	token     string
	refreshAt time.Time
}

// requestToken asks for a token of the pod's ServiceAccount bound to the
// pod, so that it dies with the pod.
func (a *Agent) requestToken(ctx context.Context, namespace, serviceAccount, podName string, podUID types.UID, audiences []string, lifetime time.Duration) (*boundToken, error) {
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		Audiences:         audiences,
		ExpirationSeconds: ptr.To(int64(lifetime / time.Second)),
		BoundObjectRef:    &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: podName, UID: podUID},
	}}
	issued := time.Now()
	resp, err := a.client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, serviceAccount, req, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("failed to request a token for service account %s/%s: %w", namespace, serviceAccount, err)
	}
	age := resp.Status.ExpirationTimestamp.Sub(issued)
	if age <= 0 {
		age = lifetime
	}
	return &boundToken{token: resp.Status.Token, refreshAt: issued.Add(min(age*8/10, maxTokenAge))}, nil
}

// token returns the token a projected serviceAccountToken source asks for,
// requesting a new one when none is cached or it is due for renewal.
// The caller holds v.mu.
func (v *podVolumes) token(ctx context.Context, pod *corev1.Pod, src *corev1.ServiceAccountTokenProjection) (string, error) {
	seconds := int64(3600)
	if src.ExpirationSeconds != nil {
		seconds = *src.ExpirationSeconds
	}
	key := fmt.Sprintf("%s/%d", src.Audience, seconds)
	if t := v.tokens[key]; t != nil && time.Now().Before(t.refreshAt) {
		return t.token, nil
	}
	var audiences []string
	if src.Audience != "" {
		audiences = []string{src.Audience}
	}
	t, err := v.p.agent.requestToken(ctx, pod.Namespace, serviceAccountName(pod), pod.Name, pod.UID, audiences, time.Duration(seconds)*time.Second)
	if err != nil {
		return "", err
	}
	v.tokens[key] = t
	return t.token, nil
}

// nextTokenRefresh returns when the earliest projected token is due, or
// the zero time when the pod has none.
func (v *podVolumes) nextTokenRefresh() time.Time {
	v.mu.Lock()
	defer v.mu.Unlock()
	var next time.Time
	for _, t := range v.tokens {
		if next.IsZero() || t.refreshAt.Before(next) {
			next = t.refreshAt
		}
	}
	return next
}

func serviceAccountName(pod *corev1.Pod) string {
	if pod.Spec.ServiceAccountName != "" {
		return pod.Spec.ServiceAccountName
	}
	return "default"
}

// tokenManager keeps a kubeconfig holding a ServiceAccount token bound to
// one pod, for processes that cannot find the in-cluster configuration
// at its fixed path (see the package documentation).
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
	token, err := t.agent.requestToken(ctx, t.namespace, t.serviceAccount, t.podName, t.podUID, nil, tokenLifetime)
	if err != nil {
		return err
	}
	if err := t.write(token.token); err != nil {
		return err
	}
	t.refreshAt = token.refreshAt
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
				t.agent.log.Error(err, "Failed to renew a token", "pod", t.namespace+"/"+t.podName)
				t.refreshAt = time.Now().Add(10 * time.Second)
			}
		}
		t.mu.Unlock()
	}
}

// write replaces the kubeconfig atomically: the API server, its CA and the
// token, inline, and nothing of the agent's own credentials.
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
