package operator_test

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hypershift-le/hypershift/hypershift-operator/rbac"
	"github.com/hypershift-le/hypershift/support/testutil"
	"github.com/hypershift-le/hypershift/test/operatorprocess"
)

// TestMetricsNeedAuthorization: the hypershift-operator serves metrics over
// HTTPS to a client the API server authenticates and authorizes for GET
// /metrics (the metrics-reader ClusterRole), and refuses the others.
func TestMetricsNeedAuthorization(t *testing.T) {
	hoNamespace := env.Namespace(t)
	metricsAddr := operatorprocess.FreeAddress(t)
	startProcess(t, hoNamespace, "ho-metrics", "hypershift-operator-metrics", "--metrics-bind-address="+metricsAddr)

	// Two ServiceAccounts with tokens: a scraper bound to the
	// metrics-reader ClusterRole, and a stranger.
	token := func(name string) string {
		t.Helper()
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: hoNamespace, Name: name}}
		if err := env.Client.Create(t.Context(), sa); err != nil {
			t.Fatal(err)
		}
		request := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(600))}}
		if err := env.Client.SubResource("token").Create(t.Context(), sa, request); err != nil {
			t.Fatal(err)
		}
		return request.Status.Token
	}
	scraper, stranger := token("scraper"), token("stranger")
	for _, obj := range []client.Object{
		rbac.MetricsReaderClusterRole(),
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "metrics-scraper-" + hoNamespace},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: rbac.MetricsReaderName},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: hoNamespace, Name: "scraper"}},
		},
	} {
		if err := env.Client.Create(t.Context(), obj); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}

	// The certificate is self-signed: the client checks nothing of it.
	httpClient := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // a self-signed test certificate
	get := func(token string) (int, string, error) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "https://"+metricsAddr+"/metrics", nil)
		if err != nil {
			return 0, "", err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := httpClient.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), err
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		code, body, err := get(scraper)
		if err != nil {
			return err
		}
		if code != http.StatusOK || !strings.Contains(body, "hypershift_leader_election_is_leader") {
			return fmt.Errorf("the scraper got %d:\n%.300s", code, body)
		}
		return nil
	})
	for _, tc := range []struct {
		who   string
		token string
		want  int
	}{
		{who: "no token", want: http.StatusUnauthorized},
		{who: "a ServiceAccount without the ClusterRole", token: stranger, want: http.StatusForbidden},
	} {
		if code, _, err := get(tc.token); err != nil || code != tc.want {
			t.Errorf("with %s: %d (%v), want %d", tc.who, code, err, tc.want)
		}
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+metricsAddr+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := http.DefaultClient.Do(req); err == nil {
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("the metrics endpoint serves plain HTTP")
		}
	}
}
