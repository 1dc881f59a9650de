package hostedcontrolplane

import (
	"context"
	"crypto/x509"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/retry"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/control-plane-operator/components/etcd"
	"github.com/hypershift-le/hypershift/control-plane-operator/components/kubeapiserver"
	"github.com/hypershift-le/hypershift/control-plane-operator/components/kubecontrollermanager"
	"github.com/hypershift-le/hypershift/control-plane-operator/components/kubescheduler"
	"github.com/hypershift-le/hypershift/control-plane-operator/pki"
	"github.com/hypershift-le/hypershift/support/releaseinfo"
	"github.com/hypershift-le/hypershift/support/releaseinfo/releasetest"
	"github.com/hypershift-le/hypershift/support/testutil"
	"github.com/hypershift-le/hypershift/test/auditlog"
	"github.com/hypershift-le/hypershift/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	os.Exit(testenv.Main(m, testenv.Options{AuditLog: true, SkipAdmissionPolicies: true}, &env))
}

// controlPlane is one control-plane namespace with this controller running
// in the test process as a user of its own, on a clock the test moves.
type controlPlane struct {
	namespace string
	hcp       *hyperv1.HostedControlPlane
	clock     *clocktesting.FakePassiveClock
	user      string
	registry  *releasetest.Registry
	// readyCalls counts how often the controller asked the kube-apiserver
	// whether it is ready: once per pass that found every component
	// available.
	readyCalls atomic.Int32
}

type options struct {
	withoutImage string
	// services replace the HostedControlPlane's spec.services.
	services []hyperv1.ServicePublishingStrategyMapping
	// pinned names the payload by digest, as the hypershift-operator does,
	// rather than by its tag.
	pinned bool
}

func start(t *testing.T, opts options) *controlPlane {
	t.Helper()
	return startIn(t, env.Namespace(t), opts)
}

// startIn is start in namespace ns, which must exist.
func startIn(t *testing.T, ns string, opts options) *controlPlane {
	t.Helper()
	registry := releasetest.NewRegistry(t)
	images := map[string]string{
		"etcd":       registry.Host() + "/etcd:4.17.0",
		"hyperkube":  registry.Host() + "/hyperkube:4.17.0",
		"hypershift": registry.Host() + "/hypershift:4.17.0",
	}
	delete(images, opts.withoutImage)
	image, digest := registry.PushRelease(t, "ocp-release:4.17.0", "4.17.0", images)
	if opts.pinned {
		image = releaseinfo.PinnedPullSpec(image, digest)
	}
	cp := &controlPlane{namespace: ns, clock: clocktesting.NewFakePassiveClock(time.Now()), user: "cpo-" + ns, registry: registry}
	cp.hcp = &hyperv1.HostedControlPlane{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "demo", Annotations: map[string]string{hyperv1.ClusterAnnotation: "clusters/demo"}},
		Spec: hyperv1.HostedControlPlaneSpec{
			ReleaseImage: image,
			Platform:     hyperv1.PlatformSpec{Type: hyperv1.NonePlatform},
			PullSecret:   hyperv1.LocalObjectReference{Name: hyperv1.PullSecretName},
			Services: []hyperv1.ServicePublishingStrategyMapping{{Service: hyperv1.APIServer, ServicePublishingStrategy: hyperv1.ServicePublishingStrategy{
				Type: hyperv1.NodePort, NodePort: &hyperv1.NodePortPublishingStrategy{Address: "127.0.0.1"},
			}}},
		},
	}
	if opts.services != nil {
		cp.hcp.Spec.Services = opts.services
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: hyperv1.PullSecretName},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: registry.DockerConfigJSON("u", "p")},
	}
	for _, obj := range []client.Object{secret, cp.hcp} {
		if err := env.Client.Create(t.Context(), obj); err != nil {
			t.Fatal(err)
		}
	}
	cp.run(t)
	return cp
}

// run starts the controller in a manager of its own.
func (cp *controlPlane) run(t *testing.T) {
	t.Helper()
	cfg, err := env.AddUser(cp.user, "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 env.Scheme,
		Cache:                  CacheOptions(cp.namespace, cp.hcp.Name),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{
		Name:      cp.hcp.Name,
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Releases:  releaseinfo.NewRegistryProvider(),
		Recorder:  mgr.GetEventRecorder(FieldOwner),
		Clock:     cp.clock,
		Ready: func(context.Context, string, []byte) error {
			cp.readyCalls.Add(1)
			return nil
		},
		// The hosted cluster is this API server, seen through the
		// control plane's namespace: its Secrets are rewritten there.
		HostedClient: func([]byte) (client.Client, error) {
			c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
			if err != nil {
				return nil, err
			}
			return client.NewNamespacedClient(c, cp.namespace), nil
		},
	}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the manager stopped with %v", err)
		}
	})
}

// touch changes the HostedControlPlane's labels: a new pass that must
// change nothing.
func (cp *controlPlane) touch(t *testing.T) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		hcp := cp.get(t)
		if hcp.Labels == nil {
			hcp.Labels = map[string]string{}
		}
		hcp.Labels["touched"] = fmt.Sprint(time.Now().UnixNano())
		return env.Client.Update(t.Context(), hcp)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (cp *controlPlane) get(t *testing.T) *hyperv1.HostedControlPlane {
	t.Helper()
	hcp := &hyperv1.HostedControlPlane{}
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(cp.hcp), hcp); err != nil {
		t.Fatal(err)
	}
	return hcp
}

func (cp *controlPlane) secret(t *testing.T, name string) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: cp.namespace, Name: name}, s); err != nil {
		t.Fatal(err)
	}
	return s
}

// workloads are the components' workloads, in dependency order.
func workloads() []client.Object {
	return []client.Object{
		&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: etcd.Name}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: kubeapiserver.Name}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: kubecontrollermanager.Name}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: kubescheduler.Name}},
	}
}

// rollOutAll writes, for each workload as it appears, the status its
// controller writes once every replica runs (no pod runs here).
func (cp *controlPlane) rollOutAll(t *testing.T) {
	t.Helper()
	for _, w := range workloads() {
		cp.rollOut(t, w)
	}
}

// rollOut waits for the workload w names and writes the status its
// controller writes once every replica runs its latest spec.
func (cp *controlPlane) rollOut(t *testing.T, w client.Object) {
	t.Helper()
	key := client.ObjectKey{Namespace: cp.namespace, Name: w.GetName()}
	testutil.Eventually(t, 30*time.Second, func() error { return env.Client.Get(t.Context(), key, w) })
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(t.Context(), key, w); err != nil {
			return err
		}
		switch w := w.(type) {
		case *appsv1.Deployment:
			n := *w.Spec.Replicas
			w.Status = appsv1.DeploymentStatus{ObservedGeneration: w.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n}
		case *appsv1.StatefulSet:
			n := *w.Spec.Replicas
			revision := fmt.Sprintf("r%d", w.Generation)
			w.Status = appsv1.StatefulSetStatus{ObservedGeneration: w.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n,
				AvailableReplicas: n, CurrentReplicas: n, CurrentRevision: revision, UpdateRevision: revision}
		}
		return env.Client.Status().Update(t.Context(), w)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// awaitAvailable waits until the controller reports the control plane
// Available.
func (cp *controlPlane) awaitAvailable(t *testing.T) {
	t.Helper()
	testutil.Eventually(t, 30*time.Second, func() error {
		hcp := cp.get(t)
		for _, c := range hcp.Status.Conditions {
			if c.Type == hyperv1.Available && c.Status == metav1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("not Available: %+v", hcp.Status.Conditions)
	})
}

// writesSince returns the successful writes the controller made in its
// namespace since, from the API server's audit log.
func (cp *controlPlane) writesSince(t *testing.T, since time.Time) []string {
	t.Helper()
	events, err := env.AuditEvents()
	if err != nil {
		t.Fatal(err)
	}
	var writes []string
	for _, e := range events {
		if e.User.Username == cp.user && auditlog.IsWrite(e) && auditlog.Succeeded(e) && e.ObjectRef != nil &&
			e.ObjectRef.Namespace == cp.namespace && !e.RequestReceivedTimestamp.Time.Before(since) {
			writes = append(writes, fmt.Sprintf("%s %s/%s %s", e.Verb, e.ObjectRef.Resource, e.ObjectRef.Subresource, e.ObjectRef.Name))
		}
	}
	return writes
}

// kubeconfig reads a kubeconfig Secret's server, CA and client
// certificate.
func kubeconfig(t *testing.T, s *corev1.Secret) (server string, caPEM []byte, cert *x509.Certificate) {
	t.Helper()
	cfg, err := clientcmd.Load(s.Data[pki.KubeconfigKey])
	if err != nil {
		t.Fatalf("%s: %v", s.Name, err)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	cluster, user := cfg.Clusters[ctx.Cluster], cfg.AuthInfos[ctx.AuthInfo]
	return cluster.Server, cluster.CertificateAuthorityData, parseCert(t, user.ClientCertificateData)
}

// leafCert returns the certificate a PKI Secret holds, from a kubeconfig
// when it is one.
func leafCert(t *testing.T, s *corev1.Secret) *x509.Certificate {
	t.Helper()
	if _, ok := s.Data[pki.KubeconfigKey]; ok {
		_, _, cert := kubeconfig(t, s)
		return cert
	}
	return parseCert(t, s.Data[pki.TLSCertKey])
}

func parseCert(t *testing.T, certPEM []byte) *x509.Certificate {
	t.Helper()
	certs, err := certutil.ParseCertsPEM(certPEM)
	if err != nil || len(certs) != 1 {
		t.Fatalf("want one certificate, got %d (%v)", len(certs), err)
	}
	return certs[0]
}
