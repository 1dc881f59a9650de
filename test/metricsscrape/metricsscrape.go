// Package metricsscrape reads an operator's authorized metrics endpoint in
// tests: tokens of ServiceAccounts with and without the metrics-reader
// ClusterRole, a GET over HTTPS that trusts the operator's self-signed
// certificate, the one check both operators' tests make of it, and the
// Prometheus Operator's ServiceMonitor CRD for tests of what renders one.
package metricsscrape

import (
	"context"
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
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hypershift-le/hypershift/hypershift-operator/rbac"
	"github.com/hypershift-le/hypershift/support/testutil"
)

// ExpectAuthorized checks the metrics endpoint at addr (host:port): within
// 30s a ServiceAccount of namespace bound to the metrics-reader
// ClusterRole reads it over HTTPS, and its body holds metric; a request
// without a token gets 401, a ServiceAccount without the ClusterRole 403,
// and plain HTTP nothing.
func ExpectAuthorized(t testing.TB, c client.Client, namespace, addr, metric string) {
	t.Helper()
	scraper, stranger := Tokens(t, c, namespace)
	url := "https://" + addr + "/metrics"
	testutil.Eventually(t, 30*time.Second, func() error {
		code, body, err := Get(t.Context(), url, scraper)
		if err != nil {
			return err
		}
		if code != http.StatusOK || !strings.Contains(body, metric) {
			return fmt.Errorf("the scraper got %d, want 200 with %s:\n%.300s", code, metric, body)
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
		if code, _, err := Get(t.Context(), url, tc.token); err != nil || code != tc.want {
			t.Errorf("with %s: %d (%v), want %d", tc.who, code, err, tc.want)
		}
	}
	if code, _, err := Get(t.Context(), "http://"+addr+"/metrics", ""); err == nil && code == http.StatusOK {
		t.Error("the metrics endpoint serves plain HTTP")
	}
}

// Tokens creates two ServiceAccounts in namespace, a scraper bound to the
// metrics-reader ClusterRole (created when missing) and a stranger bound
// to nothing, and returns a token of each.
func Tokens(t testing.TB, c client.Client, namespace string) (reader, stranger string) {
	t.Helper()
	reader, stranger = token(t, c, namespace, "scraper"), token(t, c, namespace, "stranger")
	for _, obj := range []client.Object{
		rbac.MetricsReaderClusterRole(),
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "metrics-scraper-" + namespace},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: rbac.MetricsReaderName},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: "scraper"}},
		},
	} {
		if err := c.Create(t.Context(), obj); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	return reader, stranger
}

func token(t testing.TB, c client.Client, namespace, name string) string {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if err := c.Create(t.Context(), sa); err != nil {
		t.Fatal(err)
	}
	request := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(600))}}
	if err := c.SubResource("token").Create(t.Context(), sa, request); err != nil {
		t.Fatal(err)
	}
	return request.Status.Token
}

// The certificate is self-signed: the client checks nothing of it.
var httpClient = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // a self-signed test certificate

// Get sends GET url with token as the bearer token ("" sends none) and
// returns the status code and the body.
func Get(ctx context.Context, url, token string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
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

// ServiceMonitorCRD is the Prometheus Operator's ServiceMonitor CRD,
// reduced to what the API server needs to serve the kind.
func ServiceMonitorCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "servicemonitors.monitoring.coreos.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "monitoring.coreos.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "servicemonitors", Singular: "servicemonitor", Kind: "ServiceMonitor", ListKind: "ServiceMonitorList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: new(true),
				}}}},
		},
	}
}
