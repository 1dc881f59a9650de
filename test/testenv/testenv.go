// Package testenv starts a real kube-apiserver and etcd for the project's
// integration tests (controller-runtime's envtest, with binaries that
// `make testbin` builds from Go modules), installs the project's CRDs and
// admission policies, and gives tests what they need on top: a fresh
// namespace per test, extra users with their own credentials, and the
// API server's audit log.
//
// Start it once per test package from TestMain:
//
//	var env *testenv.Env
//
//	func TestMain(m *testing.M) { os.Exit(testenv.Main(m, testenv.Options{}, &env)) }
package testenv

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/hypershift-le/hypershift/api/crds"
	"github.com/hypershift-le/hypershift/support/scheme"
)

// Options selects what the test control plane provides beyond the basics.
type Options struct {
	// AuditLog turns on the API server's audit log at Metadata level for
	// every request; read it with Env.AuditEvents.
	AuditLog bool
	// AuditLogMaxSizeMB, when set, rotates the audit log at that size
	// (the API server's default is 100 MB).
	AuditLogMaxSizeMB int
	// APIServerFlags are further flags of the API server, by name without
	// the leading dashes (e.g. the audit flags a component renders); they
	// take precedence over what the other options set.
	APIServerFlags map[string]string
	// EtcdFlags are further flags of etcd, by name without the leading
	// dashes.
	EtcdFlags map[string]string
	// SkipAdmissionPolicies leaves out the project's ValidatingAdmissionPolicies.
	SkipAdmissionPolicies bool
	// SkipCRDs leaves out the project's and Cluster API's
	// CustomResourceDefinitions, and with them the admission policies that
	// name them: a bare API server, as a hosted cluster's is when it starts.
	SkipCRDs bool
	// ControllerManager runs kube-controller-manager's namespace and
	// garbage-collector controllers, so deleted namespaces really go away.
	ControllerManager bool
	// ControllerManagerControllers replaces that list of controllers (e.g.
	// with deployment-controller and replicaset-controller for a cluster
	// that runs pods).
	ControllerManagerControllers []string
	// ControllerManagerFlags are flags of kube-controller-manager, by name
	// without the leading dashes; each replaces the environment's own of
	// that name (e.g. controllers, use-service-account-credentials).
	ControllerManagerFlags map[string]string
	// ServiceAccountAdmission turns the ServiceAccount admission plugin
	// back on (envtest turns it off): pods get their ServiceAccount, and
	// need it to exist. Namespace then waits for the namespace's default
	// ServiceAccount (the controller manager's serviceaccount-controller
	// creates it).
	ServiceAccountAdmission bool
	// ServiceClusterIPRange is where Services get their ClusterIP
	// (envtest's 10.0.0.0/24 when empty). When set, the API server's
	// serving certificate also names the range's first address, the
	// ClusterIP of the `kubernetes` Service, so that in-cluster clients
	// reaching the API server through it can verify it.
	ServiceClusterIPRange string
	// StateDir, when set, holds the control plane's data: etcd's data
	// directory and the API server's CA, serving certificate and
	// ServiceAccount signing key. Stop keeps it, and a later Start with the
	// same StateDir carries on with the same objects, CA and signing key.
	StateDir string
	// BindAddress is where the API server listens (envtest's 127.0.0.1 when
	// empty): 0.0.0.0 for clients in network namespaces of their own, such
	// as real nodes.
	BindAddress string
	// ServingIPs are addresses the API server's serving certificate names
	// besides 127.0.0.1: where such clients reach it.
	ServingIPs []string
	// KubeletClient makes the API server authenticate to kubelets, for
	// logs, exec and port-forward, with a client certificate of
	// KubeletClientUser (bound to system:kubelet-api-admin), signed by the
	// CA that Config.CAData holds: a kubelet trusts its clients with it.
	KubeletClient bool
	// AdvertiseAddress is the address the `kubernetes` Service's endpoint
	// shows (envtest's 127.0.0.1 when empty): where pods on real nodes
	// reach the API server through that Service.
	AdvertiseAddress string
	// Scheduler runs kube-scheduler, for pods that name no node.
	Scheduler bool
	// NodeCertificates readies the control plane for nodes that join by
	// TLS bootstrap, as kubeadm's do: the API server accepts bootstrap
	// tokens and verifies kubelets' serving certificates with the CA that
	// Config.CAData holds; kube-controller-manager signs kubelets' client
	// and serving certificates with that CA once approved, approves
	// client certificates itself (the bootstrappers' RBAC decides), and
	// cleans up old requests and expired tokens. Serving certificates are
	// for the caller to approve (package csrapproval has the rule). It
	// implies KubeletClient and ControllerManager.
	NodeCertificates bool
}

// KubeletClientUser is the user the API server is to kubelets.
const KubeletClientUser = "kube-apiserver-kubelet-client"

// Env is a running test control plane.
type Env struct {
	// Config authenticates as a cluster admin.
	Config *rest.Config
	// Client is a cluster-admin client that knows the project's types.
	Client client.Client
	// Scheme knows the Kubernetes and project types.
	Scheme *runtime.Scheme
	// AuditLogPath is the audit log file, when Options.AuditLog is set.
	AuditLogPath string

	env *envtest.Environment
	// usersMu serializes adding users: envtest's certificate authority
	// keeps its serial number without a lock, and parallel tests add users.
	usersMu               sync.Mutex
	auditLogMaxSizeMB     int
	tempDir               string
	nodeCertificates      bool
	stopControllerManager func() error
	stopScheduler         func() error
	waitForServiceAccount bool
	watchdog              *watchdog
}

// Start starts etcd and kube-apiserver, installs the CRDs (waiting until
// they are served) and, unless skipped, the admission policies (waiting
// until they are enforced).
func Start(ctx context.Context, opts Options) (*Env, error) {
	assets, err := BinaryAssetsDirectory()
	if err != nil {
		return nil, err
	}
	crdList, err := crds.CustomResourceDefinitions()
	if err != nil {
		return nil, err
	}
	capi, err := crds.ClusterAPICustomResourceDefinitions()
	if err != nil {
		return nil, err
	}
	crdList = append(crdList, capi...)
	if opts.SkipCRDs {
		crdList, opts.SkipAdmissionPolicies = nil, true
	}
	tempDir, err := os.MkdirTemp("", "testenv-")
	if err != nil {
		return nil, fmt.Errorf("failed to create a temporary directory: %w", err)
	}
	if opts.NodeCertificates {
		opts.KubeletClient, opts.ControllerManager = true, true
	}
	e := &Env{Scheme: scheme.New(), tempDir: tempDir, waitForServiceAccount: opts.ServiceAccountAdmission, auditLogMaxSizeMB: opts.AuditLogMaxSizeMB,
		nodeCertificates: opts.NodeCertificates}
	e.env = &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDs:                  crdList,
		ErrorIfCRDPathMissing: true,
		Scheme:                e.Scheme,
	}
	if opts.ServiceAccountAdmission {
		e.env.ControlPlane.GetAPIServer().Configure().Set("disable-admission-plugins", "")
	}
	if err := e.configureState(opts); err != nil {
		_ = os.RemoveAll(tempDir)
		return nil, err
	}
	if opts.AuditLog {
		if err := e.configureAuditLog(); err != nil {
			_ = os.RemoveAll(tempDir)
			return nil, err
		}
	}
	for name, value := range opts.APIServerFlags {
		e.env.ControlPlane.GetAPIServer().Configure().Set(name, value)
	}
	if len(opts.EtcdFlags) > 0 && e.env.ControlPlane.Etcd == nil {
		e.env.ControlPlane.Etcd = &envtest.Etcd{}
	}
	for name, value := range opts.EtcdFlags {
		e.env.ControlPlane.Etcd.Configure().Set(name, value)
	}
	e.Config, err = e.env.Start()
	if err != nil {
		_ = os.RemoveAll(tempDir)
		return nil, fmt.Errorf("failed to start the test control plane from %s: %w", assets, err)
	}
	if err := e.watchControlPlane(); err != nil {
		_ = e.Stop()
		return nil, err
	}
	e.Client, err = client.New(e.Config, client.Options{Scheme: e.Scheme})
	if err != nil {
		_ = e.Stop()
		return nil, fmt.Errorf("failed to create a client: %w", err)
	}
	if !opts.SkipAdmissionPolicies {
		if err := e.installAdmissionPolicies(ctx); err != nil {
			_ = e.Stop()
			return nil, err
		}
	}
	if opts.KubeletClient {
		if err := e.bindKubeletClient(ctx); err != nil {
			_ = e.Stop()
			return nil, err
		}
	}
	if opts.ControllerManager {
		if err := e.startControllerManager(assets, opts.ControllerManagerControllers, opts.ControllerManagerFlags); err != nil {
			_ = e.Stop()
			return nil, err
		}
	}
	if opts.Scheduler {
		if err := e.startScheduler(assets); err != nil {
			_ = e.Stop()
			return nil, err
		}
	}
	return e, nil
}

// configureState sets the Service range, and puts etcd's data and the
// certificates in opts.StateDir when set.
func (e *Env) configureState(opts Options) error {
	var extraIPs []string
	if opts.ServiceClusterIPRange != "" {
		ip, err := kubernetesServiceIP(opts.ServiceClusterIPRange)
		if err != nil {
			return err
		}
		extraIPs = append(extraIPs, ip)
		e.env.ControlPlane.GetAPIServer().Configure().Set("service-cluster-ip-range", opts.ServiceClusterIPRange)
	}
	extraIPs = append(extraIPs, opts.ServingIPs...)
	if opts.BindAddress != "" {
		e.env.ControlPlane.GetAPIServer().Configure().Set("bind-address", opts.BindAddress)
	}
	if opts.AdvertiseAddress != "" {
		e.env.ControlPlane.GetAPIServer().Configure().Set("advertise-address", opts.AdvertiseAddress)
	}
	// On stop, the API server ends its watches instead of waiting for
	// their clients to (kubelets, pods of real nodes: up to its 60s
	// shutdown timeout, past envtest's 20s).
	e.env.ControlPlane.GetAPIServer().Configure().Set("shutdown-watch-termination-grace-period", "5s")
	if opts.StateDir == "" && len(extraIPs) == 0 && !opts.KubeletClient {
		return nil
	}
	certDir := filepath.Join(e.tempDir, "certs")
	if opts.StateDir != "" {
		certDir = filepath.Join(opts.StateDir, "certs")
		e.env.ControlPlane.Etcd = &envtest.Etcd{DataDir: filepath.Join(opts.StateDir, "etcd")}
		if err := os.MkdirAll(e.env.ControlPlane.Etcd.DataDir, 0o700); err != nil {
			return fmt.Errorf("failed to create etcd's data directory: %w", err)
		}
	}
	if err := useOwnCertificates(e.env, certDir, extraIPs); err != nil {
		return err
	}
	if opts.KubeletClient {
		if err := useKubeletClientCertificate(e.env, certDir); err != nil {
			return err
		}
	}
	if opts.NodeCertificates {
		args := e.env.ControlPlane.GetAPIServer().Configure()
		args.Set("enable-bootstrap-token-auth", "true")
		args.Set("kubelet-certificate-authority", filepath.Join(certDir, caCertFile))
	}
	return nil
}

// Stop stops the control plane and removes its files.
func (e *Env) Stop() error {
	var err error
	if e.stopScheduler != nil {
		err = e.stopScheduler()
	}
	if e.stopControllerManager != nil {
		err = errors.Join(err, e.stopControllerManager())
	}
	stopErr := e.env.Stop()
	if e.watchdog != nil {
		// A control plane that did not stop is killed.
		err = errors.Join(err, e.watchdog.release(stopErr != nil))
	}
	err = errors.Join(err, stopErr)
	return errors.Join(err, os.RemoveAll(e.tempDir))
}

// Main starts the environment, runs the package's tests and stops it. It
// returns the exit code for os.Exit. A package whose tests need the
// environment fails as a whole, with the reason, when it cannot start.
func Main(m *testing.M, opts Options, env **Env) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	e, err := Start(ctx, opts)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: the test control plane did not start: %v\n", err)
		return 1
	}
	*env = e
	code := m.Run()
	if err := e.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "failed to stop the test control plane: %v\n", err)
	}
	return code
}

// AddUser adds a user authenticated by its own client certificate, member
// of groups, with no permissions beyond what RBAC grants those names.
func (e *Env) AddUser(name string, groups ...string) (*rest.Config, error) {
	user, err := e.addUser(envtest.User{Name: name, Groups: groups})
	if err != nil {
		return nil, fmt.Errorf("failed to add user %s: %w", name, err)
	}
	return user.Config(), nil
}

// AddUserKubeconfig adds a user like AddUser and writes its kubeconfig to a
// file, for processes the test starts; the file goes with the environment.
func (e *Env) AddUserKubeconfig(name string, groups ...string) (string, error) {
	user, err := e.addUser(envtest.User{Name: name, Groups: groups})
	if err != nil {
		return "", fmt.Errorf("failed to add user %s: %w", name, err)
	}
	raw, err := user.KubeConfig()
	if err != nil {
		return "", fmt.Errorf("failed to render a kubeconfig for %s: %w", name, err)
	}
	f, err := os.CreateTemp(e.tempDir, "user-*.kubeconfig")
	if err != nil {
		return "", fmt.Errorf("failed to create a kubeconfig file: %w", err)
	}
	defer func() { _ = f.Close() }()
	if _, err := f.Write(raw); err != nil {
		return "", fmt.Errorf("failed to write the kubeconfig: %w", err)
	}
	return f.Name(), nil
}

func (e *Env) addUser(user envtest.User) (*envtest.AuthenticatedUser, error) {
	e.usersMu.Lock()
	defer e.usersMu.Unlock()
	return e.env.AddUser(user, e.Config)
}

// WriteKubeconfig writes a cluster-admin kubeconfig for kubectl to path.
func (e *Env) WriteKubeconfig(path string) error {
	user, err := e.addUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}})
	if err != nil {
		return fmt.Errorf("failed to add the admin user: %w", err)
	}
	raw, err := user.KubeConfig()
	if err != nil {
		return fmt.Errorf("failed to render a kubeconfig: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("failed to create the kubeconfig's directory: %w", err)
	}
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		return fmt.Errorf("failed to write the kubeconfig: %w", err)
	}
	return nil
}

// Namespace creates a namespace for one test, named after it, and deletes it
// when the test ends.
func (e *Env) Namespace(t testing.TB) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "test-"}}
	if err := e.Client.Create(t.Context(), ns); err != nil {
		t.Fatalf("failed to create a test namespace: %v", err)
	}
	if e.waitForServiceAccount {
		e.awaitDefaultServiceAccount(t, ns.Name)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := e.Client.Delete(ctx, ns); client.IgnoreNotFound(err) != nil {
			t.Errorf("failed to delete test namespace %s: %v", ns.Name, err)
		}
	})
	return ns.Name
}

// LabelNamespace sets labels on namespace name, as the
// hypershift-operator labels a control-plane namespace.
func (e *Env) LabelNamespace(t testing.TB, name string, labels map[string]string) {
	t.Helper()
	namespace := &corev1.Namespace{}
	if err := e.Client.Get(t.Context(), client.ObjectKey{Name: name}, namespace); err != nil {
		t.Fatalf("failed to get namespace %s: %v", name, err)
	}
	patch := client.MergeFrom(namespace.DeepCopy())
	if namespace.Labels == nil {
		namespace.Labels = map[string]string{}
	}
	maps.Copy(namespace.Labels, labels)
	if err := e.Client.Patch(t.Context(), namespace, patch); err != nil {
		t.Fatalf("failed to label namespace %s: %v", name, err)
	}
}

// AsPod returns a client that is the ServiceAccount namespace/serviceAccount
// with a token bound to pod, as the API server sees a pod's process: the
// pod's name in the user's extra authentication.kubernetes.io/pod-name
// (pod "" carries none, as a token from a Secret would not).
func (e *Env) AsPod(t testing.TB, namespace, serviceAccount, pod string) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(e.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + namespace + ":" + serviceAccount,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
	}
	if pod != "" {
		cfg.Impersonate.Extra = map[string][]string{"authentication.kubernetes.io/pod-name": {pod}}
	}
	c, err := client.New(cfg, client.Options{Scheme: e.Scheme})
	if err != nil {
		t.Fatalf("failed to create a client for pod %s: %v", pod, err)
	}
	return c
}

// awaitDefaultServiceAccount waits until the namespace has its default
// ServiceAccount, without which admission refuses every Pod.
func (e *Env) awaitDefaultServiceAccount(t testing.TB, namespace string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := e.Client.Get(t.Context(), client.ObjectKey{Namespace: namespace, Name: "default"}, &corev1.ServiceAccount{})
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("namespace %s has no default ServiceAccount after 30s: %v", namespace, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Process finds a process of the test control plane by its program's name
// (etcd, kube-apiserver, kube-controller-manager): a child of this test
// binary, and, for etcd and kube-apiserver, this control plane's own (its
// command line names its port) when the binary runs more than one. Tests
// freeze one (SIGSTOP) to take the API server, or its storage, away.
func (e *Env) Process(name string) (*os.Process, error) {
	var marker string
	switch name {
	case "kube-apiserver":
		if u, err := url.Parse(e.Config.Host); err == nil {
			marker = "--secure-port=" + u.Port()
		}
	case "etcd":
		marker = e.EtcdURL()
	}
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		return nil, err
	}
	parent := strconv.Itoa(os.Getpid())
	// The kernel keeps the first 15 bytes of a program's name.
	comm := name[:min(len(name), 15)]
	for _, stat := range stats {
		raw, err := os.ReadFile(stat)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		line := string(raw)
		open, closing := strings.Index(line, "("), strings.LastIndex(line, ")")
		if open < 0 || closing < open {
			continue
		}
		fields := strings.Fields(line[closing+1:])
		if line[open+1:closing] != comm || len(fields) < 2 || fields[1] != parent {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(line[:open]))
		if err != nil {
			continue
		}
		if marker != "" {
			cmdline, err := os.ReadFile(filepath.Join(filepath.Dir(stat), "cmdline"))
			if err != nil || !strings.Contains(string(cmdline), marker) {
				continue
			}
		}
		return os.FindProcess(pid)
	}
	return nil, fmt.Errorf("no %s process is a child of this test binary", name)
}

// EtcdURL is where the API server's etcd serves its clients (plain HTTP
// on the loopback): tests read what the API server stored there, e.g. to
// see that a Secret is encrypted. Keys start with /registry/.
func (e *Env) EtcdURL() string {
	return e.env.ControlPlane.Etcd.URL.String()
}
