package testenv

import (
	"bytes"
	"context"
	"crypto/x509"
	"net"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestStateDirIsKept: a second control plane on the same StateDir finds
// the first one's objects and trusts with the same CA, and its serving
// certificate names the `kubernetes` Service's ClusterIP of the range.
func TestStateDirIsKept(t *testing.T) {
	opts := Options{SkipAdmissionPolicies: true, StateDir: t.TempDir(), ServiceClusterIPRange: "127.203.0.0/16"}
	start := func() *Env {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		e, err := Start(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	first := start()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kept"}, Data: map[string]string{"a": "b"}}
	if err := first.Client.Create(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	firstCA := first.Config.CAData
	if err := first.Stop(); err != nil {
		t.Fatal(err)
	}

	second := start()
	defer func() { _ = second.Stop() }()
	got := &corev1.ConfigMap{}
	if err := second.Client.Get(t.Context(), client.ObjectKeyFromObject(cm), got); err != nil || got.Data["a"] != "b" {
		t.Errorf("the kept ConfigMap: %v, %v", got.Data, err)
	}
	if !bytes.Equal(second.Config.CAData, firstCA) {
		t.Error("the second control plane has another CA")
	}
	svc := &corev1.Service{}
	if err := second.Client.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: "kubernetes"}, svc); err != nil || svc.Spec.ClusterIP != "127.203.0.1" {
		t.Fatalf("the kubernetes Service has ClusterIP %q (%v), want 127.203.0.1", svc.Spec.ClusterIP, err)
	}
	certs, err := cert.ParseCertsPEM(mustRead(t, second.env.ControlPlane.APIServer.CertDir+"/"+servingCertFile))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(second.Config.CAData)
	if _, err := certs[0].Verify(x509.VerifyOptions{Roots: pool}); err != nil || certs[0].VerifyHostname(svc.Spec.ClusterIP) != nil {
		t.Errorf("the serving certificate does not verify for %s: %v, names %v %v", svc.Spec.ClusterIP, err, certs[0].IPAddresses, certs[0].DNSNames)
	}
	if !containsIP(certs[0].IPAddresses, "127.0.0.1") {
		t.Errorf("the serving certificate does not name 127.0.0.1: %v", certs[0].IPAddresses)
	}
}

func containsIP(ips []net.IP, want string) bool {
	for _, ip := range ips {
		if ip.String() == want {
			return true
		}
	}
	return false
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}
