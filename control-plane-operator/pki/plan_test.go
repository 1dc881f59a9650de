package pki

import (
	"bytes"
	"crypto/x509"
	"errors"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func testInputs() Inputs {
	return Inputs{
		Namespace:   "clusters-demo",
		Labels:      map[string]string{"hypershift.openshift.io/control-plane-component": "pki"},
		ClusterName: "clusters-demo",
		EtcdServer:  Names{DNSNames: []string{"etcd-client", "localhost"}, IPAddresses: []net.IP{net.ParseIP("172.30.0.10"), net.ParseIP("127.0.0.1")}},
		EtcdPeer:    Names{DNSNames: []string{"etcd-0"}, IPAddresses: []net.IP{net.ParseIP("172.30.0.11")}},
		KubeAPIServer: Names{
			DNSNames:    []string{"kubernetes", "kubernetes.default.svc", "localhost"},
			IPAddresses: []net.IP{net.ParseIP("172.30.0.12"), net.ParseIP("172.31.0.1"), net.ParseIP("127.0.0.1")},
		},
		InternalURL: "https://172.30.0.12:6443",
		ExternalURL: "https://127.0.0.1:30443",
	}
}

// allSecrets are the Secrets Plan writes when the external URL is known.
var allSecrets = []string{
	RootCASecret, EtcdSignerSecret, EtcdServerSecret, EtcdPeerSecret, EtcdClientSecret,
	KubeAPIServerSecret, ServiceAccountKeySecret, EncryptionKeySecret, EncryptionConfigSecret, KubeControllerManagerKubeconfigSecret,
	KubeSchedulerKubeconfigSecret, KubeletClientSecret, HostedClusterConfigKubeconfigSecret, AdminKubeconfigSecret,
}

func mustPlan(t *testing.T, in Inputs, live map[string]*corev1.Secret, now time.Time) *Result {
	t.Helper()
	result, err := Plan(in, live, now)
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	return result
}

// byName turns a result into live Secrets, deep-copied so tests may damage
// them.
func byName(r *Result) map[string]*corev1.Secret {
	live := map[string]*corev1.Secret{}
	for _, s := range r.Secrets {
		live[s.Name] = s.DeepCopy()
	}
	return live
}

func writtenNames(r *Result) []string {
	var names []string
	for _, w := range r.Writes {
		names = append(names, w.Secret)
	}
	return names
}

func TestPlanIssuesEverythingThatIsMissing(t *testing.T) {
	result := mustPlan(t, testInputs(), nil, t0)
	var got []string
	for _, s := range result.Secrets {
		got = append(got, s.Name)
		if s.Namespace != "clusters-demo" || s.Labels["hypershift.openshift.io/control-plane-component"] != "pki" {
			t.Errorf("%s: namespace %q labels %v", s.Name, s.Namespace, s.Labels)
		}
	}
	if diff := cmp.Diff(allSecrets, got); diff != "" {
		t.Errorf("Secrets (-want +got):\n%s", diff)
	}
	for _, w := range result.Writes {
		if w.Reason != reasonMissing || w.Cause != Missing {
			t.Errorf("%s: write %+v, want %q", w.Secret, w, reasonMissing)
		}
	}
	if diff := cmp.Diff(allSecrets, writtenNames(result)); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(allSecrets, Secrets); diff != "" {
		t.Errorf("the Secrets list is not what Plan writes (-planned +listed):\n%s", diff)
	}
	wantRenewal := t0.Add(-backdate).Add((LeafValidity + backdate) * 2 / 3)
	if !result.RenewAt.Equal(wantRenewal) {
		t.Errorf("RenewAt = %s, want %s", result.RenewAt, wantRenewal)
	}
}

func TestPlanWithoutAnExternalURLLeavesTheAdminKubeconfigAlone(t *testing.T) {
	in := testInputs()
	in.ExternalURL = ""
	result := mustPlan(t, in, nil, t0)
	for _, s := range result.Secrets {
		if s.Name == AdminKubeconfigSecret {
			t.Fatal("the admin kubeconfig was planned without an endpoint to reach")
		}
	}
}

func TestPlanKeepsWhatIsStillRightByteForByte(t *testing.T) {
	first := mustPlan(t, testInputs(), nil, t0)
	for _, now := range []time.Time{t0, t0.Add(24 * time.Hour), t0.Add(200 * 24 * time.Hour)} {
		again := mustPlan(t, testInputs(), byName(first), now)
		if len(again.Writes) != 0 {
			t.Errorf("at %s: writes %+v, want none", now, again.Writes)
		}
		for i, s := range again.Secrets {
			if diff := cmp.Diff(first.Secrets[i].Data, s.Data); diff != "" {
				t.Errorf("at %s: %s changed (-before +after):\n%s", now, s.Name, diff)
			}
		}
	}
}

func TestPlanReissues(t *testing.T) {
	otherCA := mustPlan(t, testInputs(), nil, t0).Secrets[0]
	renewal := t0.Add(-backdate).Add((LeafValidity + backdate) * 2 / 3)
	tests := []struct {
		name    string
		change  func(in *Inputs, live map[string]*corev1.Secret)
		now     time.Time
		want    []Write
		unequal []string // Secrets whose certificate must be new
	}{
		{
			name: "when every leaf is past two thirds of its lifetime, every leaf is re-issued and the CAs are kept",
			now:  renewal,
			want: []Write{
				{Secret: EtcdServerSecret, Reason: reasonRenew, Cause: Due}, {Secret: EtcdPeerSecret, Reason: reasonRenew, Cause: Due},
				{Secret: EtcdClientSecret, Reason: reasonRenew, Cause: Due}, {Secret: KubeAPIServerSecret, Reason: reasonRenew, Cause: Due},
				{Secret: KubeControllerManagerKubeconfigSecret, Reason: reasonRenew, Cause: Due}, {Secret: KubeSchedulerKubeconfigSecret, Reason: reasonRenew, Cause: Due},
				{Secret: KubeletClientSecret, Reason: reasonRenew, Cause: Due}, {Secret: HostedClusterConfigKubeconfigSecret, Reason: reasonRenew, Cause: Due},
				{Secret: AdminKubeconfigSecret, Reason: reasonRenew, Cause: Due},
			},
			unequal: []string{EtcdServerSecret, KubeAPIServerSecret, AdminKubeconfigSecret},
		},
		{
			name: "when a leaf is a second short of two thirds of its lifetime, it is kept",
			now:  renewal.Add(-time.Second),
		},
		{
			name: "when a leaf has expired, it is re-issued as damaged",
			change: func(_ *Inputs, live map[string]*corev1.Secret) {
				delete(live, EtcdClientSecret) // re-issued below with the rest
			},
			now: t0.Add(LeafValidity + time.Hour),
			want: []Write{
				{Secret: EtcdServerSecret, Reason: reasonExpired, Cause: Damaged}, {Secret: EtcdPeerSecret, Reason: reasonExpired, Cause: Damaged},
				{Secret: EtcdClientSecret, Reason: reasonMissing, Cause: Missing}, {Secret: KubeAPIServerSecret, Reason: reasonExpired, Cause: Damaged},
				{Secret: KubeControllerManagerKubeconfigSecret, Reason: reasonExpired, Cause: Damaged}, {Secret: KubeSchedulerKubeconfigSecret, Reason: reasonExpired, Cause: Damaged},
				{Secret: KubeletClientSecret, Reason: reasonExpired, Cause: Damaged}, {Secret: HostedClusterConfigKubeconfigSecret, Reason: reasonExpired, Cause: Damaged},
				{Secret: AdminKubeconfigSecret, Reason: reasonExpired, Cause: Damaged},
			},
		},
		{
			name: "when the clock is before a certificate's start, it is re-issued as damaged",
			change: func(in *Inputs, live map[string]*corev1.Secret) {
				delete(live, KubeAPIServerSecret)
				later := mustPlan(t, *in, live, t0.Add(10*24*time.Hour))
				live[KubeAPIServerSecret] = byName(later)[KubeAPIServerSecret]
			},
			want: []Write{{Secret: KubeAPIServerSecret, Reason: reasonNotYetValid, Cause: Damaged}},
		},
		{
			name: "when a certificate is tampered with, it is re-issued as damaged",
			change: func(_ *Inputs, live map[string]*corev1.Secret) {
				live[KubeAPIServerSecret].Data[TLSCertKey] = []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
			},
			want:    []Write{{Secret: KubeAPIServerSecret, Reason: reasonCertInvalid, Cause: Damaged}},
			unequal: []string{KubeAPIServerSecret},
		},
		{
			name: "when a private key is tampered with, it is re-issued as damaged",
			change: func(_ *Inputs, live map[string]*corev1.Secret) {
				live[EtcdPeerSecret].Data[TLSKeyKey] = []byte("not a key")
			},
			want: []Write{{Secret: EtcdPeerSecret, Reason: reasonKeyInvalid, Cause: Damaged}},
		},
		{
			name: "when a key belongs to another certificate, it is re-issued as damaged",
			change: func(_ *Inputs, live map[string]*corev1.Secret) {
				live[EtcdServerSecret].Data[TLSKeyKey] = live[EtcdPeerSecret].Data[TLSKeyKey]
			},
			want: []Write{{Secret: EtcdServerSecret, Reason: reasonKeyMismatch, Cause: Damaged}},
		},
		{
			name: "when a certificate and its key are replaced by another CA's, it is re-issued as damaged",
			change: func(_ *Inputs, live map[string]*corev1.Secret) {
				live[KubeAPIServerSecret].Data[TLSCertKey] = otherCA.Data[CACertKey]
				live[KubeAPIServerSecret].Data[TLSKeyKey] = otherCA.Data[CAKeyKey]
			},
			want: []Write{{Secret: KubeAPIServerSecret, Reason: reasonNotSigned, Cause: Damaged}},
		},
		{
			name: "when a Secret is deleted, it is re-issued and says it did not exist",
			change: func(_ *Inputs, live map[string]*corev1.Secret) {
				delete(live, KubeSchedulerKubeconfigSecret)
			},
			want: []Write{{Secret: KubeSchedulerKubeconfigSecret, Reason: reasonMissing, Cause: Missing}},
		},
		{
			name: "when a Secret exists with its keys removed, it is re-issued as damaged",
			change: func(_ *Inputs, live map[string]*corev1.Secret) {
				live[EtcdClientSecret].Data = nil
			},
			want: []Write{{Secret: EtcdClientSecret, Reason: reasonCertInvalid, Cause: Damaged}},
		},
		{
			name: "when the kube-apiserver is published at another address, only its certificate and the admin kubeconfig change",
			change: func(in *Inputs, _ map[string]*corev1.Secret) {
				in.KubeAPIServer.IPAddresses = append(in.KubeAPIServer.IPAddresses, net.ParseIP("192.0.2.7"))
				in.ExternalURL = "https://192.0.2.7:30443"
			},
			want:    []Write{{Secret: KubeAPIServerSecret, Reason: reasonNames, Cause: Changed}, {Secret: AdminKubeconfigSecret, Reason: reasonServer, Cause: Changed}},
			unequal: []string{KubeAPIServerSecret},
		},
		{
			name: "when the names are the same in another order, nothing changes",
			change: func(in *Inputs, _ map[string]*corev1.Secret) {
				slices.Reverse(in.KubeAPIServer.DNSNames)
				slices.Reverse(in.KubeAPIServer.IPAddresses)
			},
		},
		{
			name: "when a certificate Secret's CA certificate is changed, it is rewritten with the same certificate",
			change: func(_ *Inputs, live map[string]*corev1.Secret) {
				live[EtcdServerSecret].Data[CACertKey] = otherCA.Data[CACertKey]
			},
			want: []Write{{Secret: EtcdServerSecret, Reason: reasonCAOutdated, Cause: Damaged}},
		},
		{
			name: "when the internal URL changes, the kubeconfigs that use it are rewritten",
			change: func(in *Inputs, _ map[string]*corev1.Secret) {
				in.InternalURL = "https://172.30.0.99:6443"
			},
			want: []Write{
				{Secret: KubeControllerManagerKubeconfigSecret, Reason: reasonServer, Cause: Changed}, {Secret: KubeSchedulerKubeconfigSecret, Reason: reasonServer, Cause: Changed},
				{Secret: HostedClusterConfigKubeconfigSecret, Reason: reasonServer, Cause: Changed},
			},
		},
		{
			name: "when a kubeconfig does not parse, it is re-issued as damaged",
			change: func(_ *Inputs, live map[string]*corev1.Secret) {
				live[AdminKubeconfigSecret].Data[KubeconfigKey] = []byte("{not yaml")
			},
			want: []Write{{Secret: AdminKubeconfigSecret, Reason: reasonKubeconfigInvalid, Cause: Damaged}},
		},
		{
			name: "when the service-account public key is tampered with, it is derived again from the private key",
			change: func(_ *Inputs, live map[string]*corev1.Secret) {
				live[ServiceAccountKeySecret].Data[ServiceAccountPublicKeyKey] = []byte("garbage")
			},
			want: []Write{{Secret: ServiceAccountKeySecret, Reason: reasonPublicKey, Cause: Damaged}},
		},
		{
			name: "when the service-account private key is tampered with, the pair is generated again",
			change: func(_ *Inputs, live map[string]*corev1.Secret) {
				live[ServiceAccountKeySecret].Data[ServiceAccountPrivateKeyKey] = []byte("garbage")
			},
			want: []Write{{Secret: ServiceAccountKeySecret, Reason: reasonKeyInvalid, Cause: Damaged}},
		},
		{
			name: "when the root CA is deleted, a new one is issued and everything it signed is re-issued",
			change: func(_ *Inputs, live map[string]*corev1.Secret) {
				delete(live, RootCASecret)
			},
			want: []Write{
				{Secret: RootCASecret, Reason: reasonMissing, Cause: Missing}, {Secret: KubeAPIServerSecret, Reason: reasonNotSigned, Cause: Damaged},
				{Secret: KubeControllerManagerKubeconfigSecret, Reason: reasonNotSigned, Cause: Damaged},
				{Secret: KubeSchedulerKubeconfigSecret, Reason: reasonNotSigned, Cause: Damaged},
				{Secret: KubeletClientSecret, Reason: reasonNotSigned, Cause: Damaged}, {Secret: HostedClusterConfigKubeconfigSecret, Reason: reasonNotSigned, Cause: Damaged},
				{Secret: AdminKubeconfigSecret, Reason: reasonNotSigned, Cause: Damaged},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := testInputs()
			first := mustPlan(t, in, nil, t0)
			live := byName(first)
			if tt.change != nil {
				tt.change(&in, live)
			}
			now := tt.now
			if now.IsZero() {
				now = t0.Add(time.Hour)
			}
			result := mustPlan(t, in, live, now)
			if diff := cmp.Diff(tt.want, result.Writes); diff != "" {
				t.Errorf("writes (-want +got):\n%s", diff)
			}
			written := map[string]bool{}
			for _, w := range result.Writes {
				written[w.Secret] = true
			}
			for i, s := range result.Secrets {
				if !written[s.Name] && !equalData(first.Secrets[i], s) && live[s.Name] != nil && !equalData(live[s.Name], s) {
					t.Errorf("%s changed without a write", s.Name)
				}
			}
			for _, name := range tt.unequal {
				before, after := certOf(t, byName(first)[name]), certOf(t, byName(result)[name])
				if before.Equal(after) {
					t.Errorf("%s: the certificate was not re-issued", name)
				}
			}
			verifyAll(t, in, result, now)
		})
	}
}

func TestPlanNeverReplacesACA(t *testing.T) {
	tests := []struct {
		name   string
		secret string
		damage func(s *corev1.Secret)
		now    time.Time
	}{
		{name: "when its certificate does not parse", damage: func(s *corev1.Secret) { s.Data[CACertKey] = []byte("garbage") }},
		{name: "when its key does not parse", damage: func(s *corev1.Secret) { s.Data[CAKeyKey] = []byte("garbage") }},
		{name: "when its key belongs to another CA", damage: func(s *corev1.Secret) {
			s.Data[CAKeyKey] = mustPlan(t, testInputs(), nil, t0).Secrets[1].Data[CAKeyKey]
		}},
		{name: "when its data is gone", damage: func(s *corev1.Secret) { s.Data = nil }},
		{name: "when it holds a leaf certificate", damage: func(s *corev1.Secret) {
			leaf := mustPlan(t, testInputs(), nil, t0).Secrets[2]
			s.Data[CACertKey], s.Data[CAKeyKey] = leaf.Data[TLSCertKey], leaf.Data[TLSKeyKey]
		}},
		{name: "when it has expired", secret: RootCASecret, now: t0.Add(CAValidity + time.Hour)},
	}
	for _, secret := range []string{RootCASecret, EtcdSignerSecret} {
		for _, tt := range tests {
			if tt.secret != "" && tt.secret != secret {
				continue
			}
			t.Run(secret+" "+tt.name+", it fails naming the Secret and decides nothing", func(t *testing.T) {
				live := byName(mustPlan(t, testInputs(), nil, t0))
				if tt.damage != nil {
					tt.damage(live[secret])
				}
				now := tt.now
				if now.IsZero() {
					now = t0
				}
				result, err := Plan(testInputs(), live, now)
				var caErr *CAError
				if !errors.As(err, &caErr) || caErr.Secret != secret {
					t.Fatalf("error = %v, want a CAError for %s", err, secret)
				}
				if result != nil {
					t.Fatalf("a result came with the error: %d Secrets", len(result.Secrets))
				}
			})
		}
	}
}

func TestPlanIssuesCertificatesThatVerify(t *testing.T) {
	result := mustPlan(t, testInputs(), nil, t0)
	verifyAll(t, testInputs(), result, t0.Add(time.Minute))
	live := byName(result)
	admin, err := decodeKubeconfig(live[AdminKubeconfigSecret].Data[KubeconfigKey])
	if err != nil {
		t.Fatal(err)
	}
	cert, err := parseCert(admin.certPEM)
	if err != nil {
		t.Fatal(err)
	}
	if cert.Subject.CommonName != AdminUser || !slices.Equal(cert.Subject.Organization, []string{MastersGroup}) {
		t.Errorf("admin subject = %v, want CN=%s O=%s", cert.Subject, AdminUser, MastersGroup)
	}
	if admin.server != "https://127.0.0.1:30443" {
		t.Errorf("admin server = %q", admin.server)
	}
	if got := live[KubeAPIServerSecret].Type; got != corev1.SecretTypeTLS {
		t.Errorf("kube-apiserver Secret type = %s", got)
	}
}

// verifyAll checks every leaf chains to its CA for its usage and names, at
// now, and that every kubeconfig names its CA and server.
func verifyAll(t *testing.T, in Inputs, result *Result, now time.Time) {
	t.Helper()
	live := byName(result)
	pool := func(name string) *x509.CertPool {
		p := x509.NewCertPool()
		p.AppendCertsFromPEM(live[name].Data[CACertKey])
		return p
	}
	check := func(name string, certPEM []byte, roots *x509.CertPool, usage x509.ExtKeyUsage, host string) {
		t.Helper()
		cert, err := parseCert(certPEM)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			return
		}
		if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{usage}, DNSName: host}); err != nil {
			t.Errorf("%s does not verify for %s: %v", name, host, err)
		}
	}
	for _, ip := range in.KubeAPIServer.IPAddresses {
		check(KubeAPIServerSecret, live[KubeAPIServerSecret].Data[TLSCertKey], pool(RootCASecret), x509.ExtKeyUsageServerAuth, ip.String())
	}
	for _, name := range in.KubeAPIServer.DNSNames {
		check(KubeAPIServerSecret, live[KubeAPIServerSecret].Data[TLSCertKey], pool(RootCASecret), x509.ExtKeyUsageServerAuth, name)
	}
	for _, ip := range in.EtcdServer.IPAddresses {
		check(EtcdServerSecret, live[EtcdServerSecret].Data[TLSCertKey], pool(EtcdSignerSecret), x509.ExtKeyUsageServerAuth, ip.String())
	}
	for _, name := range in.EtcdPeer.DNSNames {
		check(EtcdPeerSecret, live[EtcdPeerSecret].Data[TLSCertKey], pool(EtcdSignerSecret), x509.ExtKeyUsageServerAuth, name)
		check(EtcdPeerSecret, live[EtcdPeerSecret].Data[TLSCertKey], pool(EtcdSignerSecret), x509.ExtKeyUsageClientAuth, "")
	}
	check(EtcdClientSecret, live[EtcdClientSecret].Data[TLSCertKey], pool(EtcdSignerSecret), x509.ExtKeyUsageClientAuth, "")
	for _, name := range []string{KubeControllerManagerKubeconfigSecret, KubeSchedulerKubeconfigSecret, AdminKubeconfigSecret} {
		s := live[name]
		if s == nil {
			continue
		}
		content, err := decodeKubeconfig(s.Data[KubeconfigKey])
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !bytes.Equal(content.caPEM, live[RootCASecret].Data[CACertKey]) {
			t.Errorf("%s does not trust the root CA", name)
		}
		check(name, content.certPEM, pool(RootCASecret), x509.ExtKeyUsageClientAuth, "")
	}
	if !publicKeyMatches(live[ServiceAccountKeySecret].Data[ServiceAccountPublicKeyKey], mustKey(t, live[ServiceAccountKeySecret].Data[ServiceAccountPrivateKeyKey]).Public()) {
		t.Error("the service-account public key does not match its private key")
	}
}

func mustKey(t *testing.T, keyPEM []byte) interface{ Public() any } {
	t.Helper()
	key, err := parseKey(keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return publicOnly{key.Public()}
}

type publicOnly struct{ key any }

func (p publicOnly) Public() any { return p.key }

func certOf(t *testing.T, s *corev1.Secret) *x509.Certificate {
	t.Helper()
	certPEM := s.Data[TLSCertKey]
	if raw, ok := s.Data[KubeconfigKey]; ok {
		content, err := decodeKubeconfig(raw)
		if err != nil {
			t.Fatal(err)
		}
		certPEM = content.certPEM
	}
	cert, err := parseCert(certPEM)
	if err != nil {
		t.Fatalf("%s: %v", s.Name, err)
	}
	return cert
}

func equalData(a, b *corev1.Secret) bool {
	return cmp.Equal(a.Data, b.Data)
}

func TestHash(t *testing.T) {
	a := &corev1.Secret{Data: map[string][]byte{"a": []byte("1"), "b": []byte("2")}}
	b := &corev1.Secret{Data: map[string][]byte{"b": []byte("2"), "a": []byte("1")}}
	c := &corev1.Secret{Data: map[string][]byte{"a": []byte("12"), "b": []byte("")}}
	if Hash(a) != Hash(b) {
		t.Error("the same data hashes differently")
	}
	if Hash(a) == Hash(c) {
		t.Error("different data with the same concatenation hashes the same")
	}
}

// TestPlanClusterAPIKubeconfig: with a cluster-api Cluster, its kubeconfig
// is planned where cluster-api reads it (<cluster>-kubeconfig, key value,
// the cluster-name label), as the cluster-api user over the internal URL;
// SecretNames lists it, so a second plan keeps it.
func TestPlanClusterAPIKubeconfig(t *testing.T) {
	in := testInputs()
	in.ClusterAPICluster = "demo"
	result := mustPlan(t, in, nil, t0)
	var secret *corev1.Secret
	for _, s := range result.Secrets {
		if s.Name == "demo-kubeconfig" {
			secret = s
		}
	}
	if secret == nil {
		t.Fatalf("no demo-kubeconfig among %v", writtenNames(result))
	}
	if secret.Labels[ClusterAPIClusterNameLabel] != "demo" || secret.Labels["hypershift.openshift.io/control-plane-component"] != "pki" {
		t.Errorf("labels %v", secret.Labels)
	}
	content, err := decodeKubeconfig(secret.Data[ClusterAPIKubeconfigKey])
	if err != nil {
		t.Fatalf("key %s: %v", ClusterAPIKubeconfigKey, err)
	}
	cert, err := parseCert(content.certPEM)
	if err != nil || cert.Subject.CommonName != ClusterAPIUser || len(cert.Subject.Organization) != 0 || content.server != in.InternalURL {
		t.Errorf("certificate of %v (%v), server %s", cert.Subject, err, content.server)
	}
	// The machines' pod network: its own user, at the published endpoint,
	// which is where the machines' kubelets reach the kube-apiserver.
	network := byName(result)[PodNetworkKubeconfigSecret]
	if network == nil {
		t.Fatalf("no %s among %v", PodNetworkKubeconfigSecret, writtenNames(result))
	}
	content, err = decodeKubeconfig(network.Data[KubeconfigKey])
	if err != nil {
		t.Fatalf("%s: %v", PodNetworkKubeconfigSecret, err)
	}
	cert, err = parseCert(content.certPEM)
	if err != nil || cert.Subject.CommonName != PodNetworkUser || len(cert.Subject.Organization) != 0 || content.server != in.ExternalURL {
		t.Errorf("%s: certificate of %v (%v), server %s", PodNetworkKubeconfigSecret, cert.Subject, err, content.server)
	}
	names := SecretNames(in)
	if diff := cmp.Diff(append(slices.Clone(allSecrets), ClusterAPIWebhookSecret, "demo-kubeconfig", PodNetworkKubeconfigSecret), names); diff != "" {
		t.Errorf("SecretNames (-want +got):\n%s", diff)
	}
	live := map[string]*corev1.Secret{}
	for name, s := range byName(result) {
		if slices.Contains(names, name) {
			live[name] = s
		}
	}
	if again := mustPlan(t, in, live, t0); len(again.Writes) > 0 {
		t.Errorf("a second plan writes %v", writtenNames(again))
	}
}
