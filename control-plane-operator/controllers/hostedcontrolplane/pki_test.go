package hostedcontrolplane

import (
	"bytes"
	"crypto/x509"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/control-plane-operator/components/etcd"
	"github.com/hypershift-le/hypershift/control-plane-operator/components/kubeapiserver"
	"github.com/hypershift-le/hypershift/control-plane-operator/pki"
	"github.com/hypershift-le/hypershift/support/testutil"
)

// verify fails the test unless cert chains to the CA in caPEM for usage
// and host at now.
func verify(t *testing.T, what string, cert *x509.Certificate, caPEM []byte, usage x509.ExtKeyUsage, host string, now time.Time) {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{usage}, DNSName: host, CurrentTime: now}); err != nil {
		t.Errorf("%s does not verify for %q: %v", what, host, err)
	}
}

// awaitPKI waits until every PKI Secret exists and the endpoint is known.
func (cp *controlPlane) awaitPKI(t *testing.T) *hyperv1.HostedControlPlane {
	t.Helper()
	var hcp *hyperv1.HostedControlPlane
	testutil.Eventually(t, 30*time.Second, func() error {
		for _, name := range pki.Secrets {
			if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: cp.namespace, Name: name}, &corev1.Secret{}); err != nil {
				return err
			}
		}
		hcp = cp.get(t)
		if hcp.Status.ControlPlaneEndpoint == nil || hcp.Status.KubeConfig == nil {
			return fmt.Errorf("endpoint %v, kubeconfig %v", hcp.Status.ControlPlaneEndpoint, hcp.Status.KubeConfig)
		}
		return nil
	})
	return hcp
}

// awaitQuiet waits until the controller made no write for a second.
func (cp *controlPlane) awaitQuiet(t *testing.T) {
	t.Helper()
	testutil.Eventually(t, 30*time.Second, func() error {
		if w := cp.writesSince(t, time.Now().Add(-time.Second)); len(w) > 0 {
			return fmt.Errorf("still writing: %v", w)
		}
		return nil
	})
}

func TestPKICoversEveryAddressAndIsValidForAYear(t *testing.T) {
	cp := start(t, options{})
	hcp := cp.awaitPKI(t)
	now := cp.clock.Now()
	service := &corev1.Service{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: cp.namespace, Name: kubeapiserver.Name}, service); err != nil {
		t.Fatal(err)
	}
	nodePort := service.Spec.Ports[0].NodePort
	if want := (hyperv1.APIEndpoint{Host: "127.0.0.1", Port: nodePort}); nodePort == 0 || *hcp.Status.ControlPlaneEndpoint != want {
		t.Fatalf("controlPlaneEndpoint = %+v, want %+v", hcp.Status.ControlPlaneEndpoint, want)
	}
	rootCA := cp.secret(t, pki.RootCASecret).Data[pki.CACertKey]
	kas := leafCert(t, cp.secret(t, pki.KubeAPIServerSecret))
	for _, host := range []string{
		service.Spec.ClusterIP, "127.0.0.1", "localhost", "172.31.0.1",
		"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local",
		"kube-apiserver", "kube-apiserver." + cp.namespace + ".svc",
	} {
		verify(t, "the kube-apiserver's certificate", kas, rootCA, x509.ExtKeyUsageServerAuth, host, now)
	}
	if lifetime := kas.NotAfter.Sub(kas.NotBefore); lifetime != pki.LeafValidity+5*time.Minute || kas.NotBefore.After(now) {
		t.Errorf("valid from %s for %s, want from before %s for a year", kas.NotBefore, lifetime, now)
	}

	etcdCA := cp.secret(t, pki.EtcdSignerSecret).Data[pki.CACertKey]
	etcdClient := &corev1.Service{}
	if err := env.Client.Get(t.Context(), client2key(cp, etcd.ClientServiceName), etcdClient); err != nil {
		t.Fatal(err)
	}
	verify(t, "etcd's serving certificate", leafCert(t, cp.secret(t, pki.EtcdServerSecret)), etcdCA, x509.ExtKeyUsageServerAuth, etcdClient.Spec.ClusterIP, now)
	verify(t, "etcd's peer certificate", leafCert(t, cp.secret(t, pki.EtcdPeerSecret)), etcdCA, x509.ExtKeyUsageServerAuth, "etcd-0", now)
	verify(t, "kube-apiserver's etcd client certificate", leafCert(t, cp.secret(t, pki.EtcdClientSecret)), etcdCA, x509.ExtKeyUsageClientAuth, "", now)

	tests := []struct {
		secret, server, user string
		groups               []string
	}{
		{secret: pki.AdminKubeconfigSecret, server: fmt.Sprintf("https://127.0.0.1:%d", nodePort), user: "system:admin", groups: []string{"system:masters"}},
		{secret: pki.KubeControllerManagerKubeconfigSecret, server: "https://" + net.JoinHostPort(service.Spec.ClusterIP, "6443"), user: "system:kube-controller-manager"},
		{secret: pki.KubeSchedulerKubeconfigSecret, server: "https://" + net.JoinHostPort(service.Spec.ClusterIP, "6443"), user: "system:kube-scheduler"},
	}
	for _, tt := range tests {
		server, caPEM, cert := kubeconfig(t, cp.secret(t, tt.secret))
		if server != tt.server || !bytes.Equal(caPEM, rootCA) || cert.Subject.CommonName != tt.user || !slices.Equal(cert.Subject.Organization, tt.groups) {
			t.Errorf("%s: server %s, subject %v, trusts the root CA %v", tt.secret, server, cert.Subject, bytes.Equal(caPEM, rootCA))
		}
		verify(t, tt.secret, cert, rootCA, x509.ExtKeyUsageClientAuth, "", now)
	}
	cp.awaitEvent(t, corev1.EventTypeNormal, "Wrote Secret "+pki.RootCASecret+": it did not exist")
}

func client2key(cp *controlPlane, name string) client.ObjectKey {
	return client.ObjectKey{Namespace: cp.namespace, Name: name}
}

// awaitEvent waits for an event on the HostedControlPlane with a note
// that starts with note.
func (cp *controlPlane) awaitEvent(t *testing.T, eventType, note string) {
	t.Helper()
	testutil.Eventually(t, 30*time.Second, func() error {
		list := &eventsv1.EventList{}
		if err := env.Client.List(t.Context(), list, client.InNamespace(cp.namespace)); err != nil {
			return err
		}
		var notes []string
		for _, e := range list.Items {
			if e.Regarding.Kind == "HostedControlPlane" && e.Type == eventType && strings.HasPrefix(e.Note, note) {
				return nil
			}
			notes = append(notes, e.Type+": "+e.Note)
		}
		return fmt.Errorf("no %s event %q among %v", eventType, note, notes)
	})
}

// TestConvergedControlPlaneWritesNothing lets the controller run several
// passes over a converged control plane: the audit log shows no write.
func TestConvergedControlPlaneWritesNothing(t *testing.T) {
	cp := start(t, options{})
	cp.awaitPKI(t)
	cp.rollOutAll(t)
	cp.awaitAvailable(t)
	cp.awaitQuiet(t)

	quiet := time.Now()
	passes := cp.readyCalls.Load()
	for range 3 {
		cp.touch(t)
		time.Sleep(time.Second)
	}
	time.Sleep(time.Second) // the audit log is written after the response
	if n := cp.readyCalls.Load() - passes; n < 3 {
		t.Fatalf("the controller made %d passes in the quiet window, want at least 3: the window proves nothing", n)
	}
	if w := cp.writesSince(t, quiet); len(w) != 0 {
		t.Fatalf("a converged control plane was written %d times: %v", len(w), w)
	}
}

// TestRotation moves the clock past two thirds of the leaves' lifetime:
// every leaf is re-issued, each with an event, the CAs stay, and then the
// controller is quiet again.
func TestRotation(t *testing.T) {
	cp := start(t, options{})
	cp.awaitPKI(t)
	cp.awaitQuiet(t)
	before := map[string]*corev1.Secret{}
	for _, name := range pki.Secrets {
		before[name] = cp.secret(t, name)
	}
	old := leafCert(t, before[pki.KubeAPIServerSecret])
	later := pki.RenewalTime(old).Add(time.Minute)
	cp.clock.SetTime(later)
	cp.touch(t)

	leaves := []string{pki.EtcdServerSecret, pki.EtcdPeerSecret, pki.EtcdClientSecret, pki.KubeAPIServerSecret,
		pki.KubeControllerManagerKubeconfigSecret, pki.KubeSchedulerKubeconfigSecret, pki.AdminKubeconfigSecret}
	testutil.Eventually(t, 30*time.Second, func() error {
		for _, name := range leaves {
			if cert := leafCert(t, cp.secret(t, name)); !cert.NotBefore.Equal(later.Add(-5 * time.Minute).Truncate(time.Second)) {
				return fmt.Errorf("%s is valid from %s", name, cert.NotBefore)
			}
		}
		return nil
	})
	for _, name := range pki.CASecrets {
		if !bytes.Equal(cp.secret(t, name).Data[pki.CACertKey], before[name].Data[pki.CACertKey]) {
			t.Errorf("CA %s was replaced by a rotation", name)
		}
	}
	if !bytes.Equal(cp.secret(t, pki.ServiceAccountKeySecret).Data[pki.ServiceAccountPrivateKeyKey], before[pki.ServiceAccountKeySecret].Data[pki.ServiceAccountPrivateKeyKey]) {
		t.Error("the service-account key was re-generated: every token would be invalid")
	}
	verify(t, "the rotated kube-apiserver certificate", leafCert(t, cp.secret(t, pki.KubeAPIServerSecret)),
		before[pki.RootCASecret].Data[pki.CACertKey], x509.ExtKeyUsageServerAuth, "kubernetes.default.svc", later)
	cp.awaitEvent(t, corev1.EventTypeNormal, "Wrote Secret "+pki.KubeAPIServerSecret+": its certificate is past two thirds of its lifetime")

	cp.awaitQuiet(t)
	quiet := time.Now()
	cp.touch(t)
	time.Sleep(2 * time.Second)
	if w := cp.writesSince(t, quiet); len(w) != 0 {
		t.Fatalf("after the rotation the controller still writes: %v", w)
	}
}

// TestDamagedAndDeletedSecretsComeBack tampers with a certificate and
// deletes a kubeconfig: both are issued again, the tampering with a
// warning, and the root CA stays.
func TestDamagedAndDeletedSecretsComeBack(t *testing.T) {
	cp := start(t, options{})
	cp.awaitPKI(t)
	cp.awaitQuiet(t)
	rootCA := cp.secret(t, pki.RootCASecret).Data[pki.CACertKey]

	updateSecret(t, cp, pki.KubeAPIServerSecret, func(s *corev1.Secret) {
		s.Data[pki.TLSCertKey] = []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
	})
	if err := env.Client.Delete(t.Context(), cp.secret(t, pki.KubeSchedulerKubeconfigSecret)); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		s := &corev1.Secret{}
		if err := env.Client.Get(t.Context(), client2key(cp, pki.KubeSchedulerKubeconfigSecret), s); err != nil {
			return err
		}
		if !bytes.Contains(cp.secret(t, pki.KubeAPIServerSecret).Data[pki.TLSCertKey], []byte("AAAA\n")) {
			return nil
		}
		return fmt.Errorf("the tampered certificate is still there")
	})
	verify(t, "the re-issued kube-apiserver certificate", leafCert(t, cp.secret(t, pki.KubeAPIServerSecret)), rootCA, x509.ExtKeyUsageServerAuth, "localhost", cp.clock.Now())
	cp.awaitEvent(t, corev1.EventTypeWarning, "Wrote Secret "+pki.KubeAPIServerSecret+": its certificate does not parse")
	cp.awaitEvent(t, corev1.EventTypeNormal, "Wrote Secret "+pki.KubeSchedulerKubeconfigSecret+": it did not exist")
	if !bytes.Equal(cp.secret(t, pki.RootCASecret).Data[pki.CACertKey], rootCA) {
		t.Error("the root CA was replaced")
	}
}

func updateSecret(t *testing.T, cp *controlPlane, name string, change func(*corev1.Secret)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s := cp.secret(t, name)
		change(s)
		return env.Client.Update(t.Context(), s)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestTheCAIsNeverReplaced damages the root CA: the controller reports it
// and leaves it alone; a CA the cache cannot see (its label removed) is
// kept, not issued again; only a deleted CA is issued anew.
func TestTheCAIsNeverReplaced(t *testing.T) {
	cp := start(t, options{})
	cp.awaitPKI(t)
	cp.awaitQuiet(t)
	original := cp.secret(t, pki.RootCASecret).DeepCopy()
	kasSerial := leafCert(t, cp.secret(t, pki.KubeAPIServerSecret)).SerialNumber

	damaged := time.Now()
	updateSecret(t, cp, pki.RootCASecret, func(s *corev1.Secret) { s.Data[pki.CACertKey] = []byte("garbage") })
	testutil.Eventually(t, 30*time.Second, func() error {
		c := meta.FindStatusCondition(cp.get(t).Status.Conditions, hyperv1.ValidPKI)
		if c == nil || c.Status != "False" || c.Reason != "UnusableCA" || !strings.Contains(c.Message, "Secret root-ca holds no usable CA") {
			return fmt.Errorf("ValidPKI = %+v", c)
		}
		return nil
	})
	cp.touch(t)
	time.Sleep(2 * time.Second)
	if got := cp.secret(t, pki.RootCASecret).Data[pki.CACertKey]; string(got) != "garbage" {
		t.Fatal("the damaged CA was replaced")
	}
	for _, w := range cp.writesSince(t, damaged) {
		if !strings.Contains(w, "hostedcontrolplanes/status") {
			t.Errorf("while the CA is unusable the controller wrote %s", w)
		}
	}

	// The CA as it was, but without the label the controller's cache
	// selects: it must be found, not issued again.
	updateSecret(t, cp, pki.RootCASecret, func(s *corev1.Secret) {
		s.Data = original.Data
		s.Labels = nil
	})
	testutil.Eventually(t, 30*time.Second, func() error {
		c := meta.FindStatusCondition(cp.get(t).Status.Conditions, hyperv1.ValidPKI)
		if c == nil || c.Status != "True" {
			return fmt.Errorf("ValidPKI = %+v", c)
		}
		return nil
	})
	if !bytes.Equal(cp.secret(t, pki.RootCASecret).Data[pki.CACertKey], original.Data[pki.CACertKey]) {
		t.Fatal("a CA the cache did not show was replaced")
	}
	if leafCert(t, cp.secret(t, pki.KubeAPIServerSecret)).SerialNumber.Cmp(kasSerial) != 0 {
		t.Error("the kube-apiserver certificate was re-issued though its CA did not change")
	}

	if err := env.Client.Delete(t.Context(), cp.secret(t, pki.RootCASecret)); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		s := &corev1.Secret{}
		if err := env.Client.Get(t.Context(), client2key(cp, pki.RootCASecret), s); err != nil {
			return err
		}
		if bytes.Equal(s.Data[pki.CACertKey], original.Data[pki.CACertKey]) {
			return fmt.Errorf("the deleted CA is back unchanged")
		}
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(s.Data[pki.CACertKey])
		if _, err := leafCert(t, cp.secret(t, pki.KubeAPIServerSecret)).Verify(x509.VerifyOptions{Roots: roots, CurrentTime: cp.clock.Now()}); err != nil {
			return fmt.Errorf("the kube-apiserver certificate is not re-issued by the new CA yet: %w", err)
		}
		return nil
	})
}

// TestAPayloadWithoutAnImageIsReportedWithoutAHotLoop: the condition names
// the missing tag, no workload is applied, and the controller then stays
// quiet.
func TestAPayloadWithoutAnImageIsReportedWithoutAHotLoop(t *testing.T) {
	cp := start(t, options{withoutImage: "hyperkube"})
	testutil.Eventually(t, 30*time.Second, func() error {
		c := meta.FindStatusCondition(cp.get(t).Status.Conditions, hyperv1.ValidReleaseImage)
		if c == nil || c.Status != "False" || c.Reason != "MissingComponentImage" || !strings.Contains(c.Message, `has no "hyperkube" image, needed by kube-apiserver`) {
			return fmt.Errorf("ValidReleaseImage = %+v", c)
		}
		return nil
	})
	cp.awaitQuiet(t)
	quiet := time.Now()
	time.Sleep(3 * time.Second)
	if w := cp.writesSince(t, quiet); len(w) != 0 {
		t.Fatalf("the controller keeps writing: %v", w)
	}
	if err := env.Client.Get(t.Context(), client2key(cp, etcd.Name), &appsv1.StatefulSet{}); err == nil {
		t.Error("etcd was applied from a payload the control plane cannot run")
	}
}

// TestPublishingAtAnotherAddressReissuesTheServingCertificate moves the
// NodePort address: the serving certificate covers the new one, the admin
// kubeconfig points at it, and the CA stays.
func TestPublishingAtAnotherAddressReissuesTheServingCertificate(t *testing.T) {
	cp := start(t, options{})
	cp.awaitPKI(t)
	cp.awaitQuiet(t)
	rootCA := cp.secret(t, pki.RootCASecret).Data[pki.CACertKey]
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		hcp := cp.get(t)
		hcp.Spec.Services[0].NodePort.Address = "127.0.0.2"
		return env.Client.Update(t.Context(), hcp)
	})
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		server, _, _ := kubeconfig(t, cp.secret(t, pki.AdminKubeconfigSecret))
		if !strings.HasPrefix(server, "https://127.0.0.2:") {
			return fmt.Errorf("the admin kubeconfig points at %s", server)
		}
		if endpoint := cp.get(t).Status.ControlPlaneEndpoint; endpoint == nil || endpoint.Host != "127.0.0.2" {
			return fmt.Errorf("controlPlaneEndpoint = %+v", endpoint)
		}
		return nil
	})
	verify(t, "the kube-apiserver certificate", leafCert(t, cp.secret(t, pki.KubeAPIServerSecret)), rootCA, x509.ExtKeyUsageServerAuth, "127.0.0.2", cp.clock.Now())
	cp.awaitEvent(t, corev1.EventTypeNormal, "Wrote Secret "+pki.KubeAPIServerSecret+": its DNS names or IP addresses must change")
	if !bytes.Equal(cp.secret(t, pki.RootCASecret).Data[pki.CACertKey], rootCA) {
		t.Error("the root CA was replaced")
	}
}
