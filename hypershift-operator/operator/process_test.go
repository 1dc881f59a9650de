package operator_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/rbac"
	"github.com/hypershift-le/hypershift/support/releaseinfo/releasetest"
	"github.com/hypershift-le/hypershift/support/testutil"
	"github.com/hypershift-le/hypershift/test/auditlog"
	"github.com/hypershift-le/hypershift/test/operatorprocess"
	"github.com/hypershift-le/hypershift/test/testenv"
)

var (
	env    *testenv.Env
	binary string
)

// TestMain builds the hypershift-operator binary from this repository and
// starts the test control plane with its audit log.
func TestMain(m *testing.M) {
	os.Exit(testenv.MainWithBinary(m, "github.com/hypershift-le/hypershift/hypershift-operator", &binary, testenv.Options{AuditLog: true}, &env))
}

// process is one hypershift-operator process running as its own user.
type process struct {
	*operatorprocess.Process
	user, healthAddr string
}

// startProcess runs `hypershift-operator run` as user, bound to the HO's
// ClusterRole and its leader-election Role in namespace, with POD_NAME=pod.
func startProcess(t *testing.T, namespace, user, pod string, extraArgs ...string) *process {
	t.Helper()
	kubeconfig, err := env.AddUserKubeconfig(user)
	if err != nil {
		t.Fatal(err)
	}
	shards := 1
	for _, arg := range extraArgs {
		if n, ok := strings.CutPrefix(arg, "--shards="); ok {
			if _, err := fmt.Sscan(n, &shards); err != nil {
				t.Fatal(err)
			}
		}
	}
	grant(t, namespace, user, shards)
	healthAddr := operatorprocess.FreeAddress(t)
	args := append([]string{"run",
		"--kubeconfig=" + kubeconfig,
		"--namespace=" + namespace,
		"--leader-elect-lease-duration=6s", "--leader-elect-renew-deadline=4s", "--leader-elect-retry-period=1s",
		"--metrics-bind-address=0",
		"--health-probe-bind-address=" + healthAddr,
	}, extraArgs...)
	return &process{Process: operatorprocess.Start(t, binary, pod, args), user: user, healthAddr: healthAddr}
}

// grant binds the HO's ClusterRole and leader-election Role (for shards)
// to user.
func grant(t *testing.T, namespace, user string, shards int) {
	t.Helper()
	grantSubject(t, namespace, user, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}, shards)
}

// grantSubject binds the HO's ClusterRole and leader-election Role (for
// shards) to subject, with bindings named name.
func grantSubject(t *testing.T, namespace, name string, subject rbacv1.Subject, shards int) {
	t.Helper()
	subjects := []rbacv1.Subject{subject}
	objects := []client.Object{
		rbac.ClusterRole(),
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: rbac.HypershiftOperatorName},
			Subjects:   subjects,
		},
		rbac.LeaderElectionRole(namespace, shards),
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: rbac.LeaderElectionRole(namespace, shards).Name},
			Subjects:   subjects,
		},
	}
	for _, obj := range objects {
		if err := env.Client.Create(t.Context(), obj); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
}

// holder returns the HO Lease's holder, "" when there is none.
func holder(t *testing.T, namespace string) string {
	return env.Holder(t, namespace, hyperv1.HypershiftOperatorLeaseName)
}

// TestTwoOperators runs two hypershift-operator processes: only the Lease
// holder writes, as the audit log shows, the standby serves health, and a
// graceful stop hands over.
func TestTwoOperators(t *testing.T) {
	hoNamespace := env.Namespace(t)
	a := startProcess(t, hoNamespace, "ho-a", "hypershift-operator-a")
	testutil.Eventually(t, 30*time.Second, func() error {
		if h := holder(t, hoNamespace); h != a.Pod {
			return fmt.Errorf("holder %q, want %s", h, a.Pod)
		}
		return nil
	})
	b := startProcess(t, hoNamespace, "ho-b", "hypershift-operator-b")
	testutil.Eventually(t, 30*time.Second, func() error { return healthy(b) })

	// A HostedCluster for them to reconcile.
	registry := releasetest.NewRegistry(t)
	image, _ := registry.PushRelease(t, "ocp-release:4.17.0", "4.17.0", map[string]string{"hypershift": registry.Host() + "/hypershift:4.17.0"})
	hc := newHostedCluster(t, registry, image)
	controlPlane := hyperv1.ControlPlaneNamespace(hc.Namespace, hc.Name)
	deployment := client.ObjectKey{Namespace: controlPlane, Name: "control-plane-operator"}
	testutil.Eventually(t, 30*time.Second, func() error { return env.Client.Get(t.Context(), deployment, &appsv1.Deployment{}) })

	t.Run("only the holder writes", func(t *testing.T) {
		if n := len(writes(t, a.user)); n == 0 {
			t.Fatal("the holder made no write: the check below would prove nothing")
		}
		if w := writes(t, b.user); len(w) != 0 {
			t.Fatalf("the standby made %d writes: %v", len(w), w)
		}
	})

	t.Run("the standby's cache watches what the holder's controllers watch", func(t *testing.T) {
		// What the HostedCluster controller reads from the cache; a standby
		// that took over without them would list every kind first.
		want := []string{"hostedclusters", "hostedcontrolplanes", "namespaces", "deployments", "serviceaccounts", "secrets",
			"roles", "rolebindings", "clusterrolebindings", "services", "validatingadmissionpolicybindings", "leases"}
		testutil.Eventually(t, 30*time.Second, func() error {
			events, err := env.AuditEvents()
			if err != nil {
				return err
			}
			watched := map[string]bool{}
			for _, e := range events {
				if e.User.Username == b.user && e.Verb == "watch" && e.ObjectRef != nil {
					watched[e.ObjectRef.Resource] = true
				}
			}
			for _, resource := range want {
				if !watched[resource] {
					return fmt.Errorf("the standby does not watch %s", resource)
				}
			}
			return nil
		})
	})

	t.Run("when the holder stops gracefully, it releases the Lease and the standby takes over", func(t *testing.T) {
		stopped := time.Now()
		if err := a.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case <-a.Done():
			if err := a.ExitErr(); err != nil {
				t.Fatalf("the holder exited with %v after SIGTERM, want 0", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the holder did not exit within 20s of SIGTERM")
		}
		testutil.Eventually(t, 10*time.Second, func() error {
			if h := holder(t, hoNamespace); h != b.Pod {
				return fmt.Errorf("holder %q, want %s", h, b.Pod)
			}
			return nil
		})
		// Well inside the 6s lease duration: the Lease was released, not left to expire.
		if took := time.Since(stopped); took > 5*time.Second {
			t.Errorf("the handover took %s", took)
		}
		// The new holder acts: it converges a change.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			current := &hyperv1.HostedCluster{}
			if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(hc), current); err != nil {
				return err
			}
			if current.Annotations == nil {
				current.Annotations = map[string]string{}
			}
			current.Annotations[hyperv1.ControlPlaneOperatorImageAnnotation] = "registry.example/control-plane-operator:next"
			return env.Client.Update(t.Context(), current)
		})
		if err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 30*time.Second, func() error {
			d := &appsv1.Deployment{}
			if err := env.Client.Get(t.Context(), deployment, d); err != nil {
				return err
			}
			if image := d.Spec.Template.Spec.Containers[0].Image; image != "registry.example/control-plane-operator:next" {
				return fmt.Errorf("image %s", image)
			}
			return nil
		})
		for _, w := range writes(t, a.user) {
			if w.At.After(stopped.Add(time.Second)) {
				t.Errorf("the stopped holder wrote after it exited: %v", w)
			}
		}
	})
}

// TestInvalidFlags checks that bad timings stop the process at start with a
// clear message.
func TestInvalidFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "when the HO's renew deadline reaches its lease duration, it refuses to start", args: []string{"--leader-elect-lease-duration=10s", "--leader-elect-renew-deadline=10s"}, want: "lease duration (10s) must exceed the renew deadline (10s) by at least 1s"},
		{name: "when the CPO timings it would render are invalid, it refuses to start", args: []string{"--cpo-leader-elect-renew-deadline=12s", "--cpo-leader-elect-retry-period=10s"}, want: "invalid --cpo-leader-elect-* timings"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			out, err := exec.CommandContext(ctx, binary, append([]string{"run"}, tt.args...)...).CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() == 0 {
				t.Fatalf("want a non-zero exit, got %v:\n%s", err, out)
			}
			if !strings.Contains(string(out), tt.want) {
				t.Fatalf("output lacks %q:\n%s", tt.want, out)
			}
		})
	}
}

// newHostedCluster creates, in a namespace of its own, a HostedCluster
// "demo" of release image and its pull secret for registry.
func newHostedCluster(t *testing.T, registry *releasetest.Registry, image string) *hyperv1.HostedCluster {
	t.Helper()
	ns := env.Namespace(t)
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pull-secret"},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: registry.DockerConfigJSON("u", "p")},
	}
	hc := &hyperv1.HostedCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "demo"},
		Spec: hyperv1.HostedClusterSpec{
			Release:    hyperv1.Release{Image: image},
			Platform:   hyperv1.PlatformSpec{Type: hyperv1.NonePlatform},
			PullSecret: hyperv1.LocalObjectReference{Name: secret.Name},
			Services:   hyperv1.NodePortServices("127.0.0.1", 0),
		},
	}
	for _, obj := range []client.Object{secret, hc} {
		if err := env.Client.Create(t.Context(), obj); err != nil {
			t.Fatal(err)
		}
	}
	return hc
}

func healthy(p *process) error {
	resp, err := http.Get("http://" + p.healthAddr + "/healthz")
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthz: %s", resp.Status)
	}
	return nil
}

// writes returns every write request user made, from the audit log.
func writes(t *testing.T, user string) []auditlog.Write {
	t.Helper()
	events, err := env.AuditEvents()
	if err != nil {
		t.Fatal(err)
	}
	return auditlog.Writes(events, auditlog.Query{Users: []string{user}})
}

// TestWaitsForTheAPIServer starts the operator while nothing answers at its
// API server's address: it waits instead of exiting, and leads once the
// API server is reachable.
func TestWaitsForTheAPIServer(t *testing.T) {
	ns := env.Namespace(t)
	addr := operatorprocess.FreeAddress(t)
	kubeconfig, err := env.AddUserKubeconfig("ho-early")
	if err != nil {
		t.Fatal(err)
	}
	unreachable, err := (&testenv.Proxy{Addr: addr}).ProxiedKubeconfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	p := startProcess(t, ns, "ho-early", "ho-early-0", "--kubeconfig="+unreachable)
	select {
	case <-p.Done():
		t.Fatalf("the operator exited while the API server was away: %v\n%s", p.ExitErr(), operatorprocess.Tail(p.Output(), 2000))
	case <-time.After(5 * time.Second):
	}
	proxy, err := testenv.StartProxyAt(env.Config.Host, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	testutil.Eventually(t, 30*time.Second, func() error {
		if h := holder(t, ns); h != "ho-early-0" {
			return fmt.Errorf("holder %q", h)
		}
		return nil
	})
	select {
	case <-p.Done():
		t.Fatalf("the operator exited: %v", p.ExitErr())
	default:
	}
}

// TestRidesOutAnOutage cuts two hypershift-operators off from the API
// server for 30s, several lease durations: the leader keeps running and
// leads again when the API server answers, with no handover, and the
// standby writes nothing.
func TestRidesOutAnOutage(t *testing.T) {
	hoNamespace := env.Namespace(t)
	proxy, err := testenv.StartProxy(env.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	via := func(user string) string {
		kubeconfig, err := env.AddUserKubeconfig(user)
		if err != nil {
			t.Fatal(err)
		}
		proxied, err := proxy.ProxiedKubeconfig(kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		return "--kubeconfig=" + proxied
	}
	a := startProcess(t, hoNamespace, "ho-outage-a", "hypershift-operator-a", via("ho-outage-a"))
	testutil.Eventually(t, 30*time.Second, func() error {
		if h := holder(t, hoNamespace); h != a.Pod {
			return fmt.Errorf("holder %q, want %s", h, a.Pod)
		}
		return nil
	})
	b := startProcess(t, hoNamespace, "ho-outage-b", "hypershift-operator-b", via("ho-outage-b"))
	testutil.Eventually(t, 30*time.Second, func() error { return healthy(b) })
	time.Sleep(2 * time.Second)
	lease := &coordinationv1.Lease{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: hoNamespace, Name: hyperv1.HypershiftOperatorLeaseName}, lease); err != nil {
		t.Fatal(err)
	}
	transitions := ptr.Deref(lease.Spec.LeaseTransitions, 0)

	proxy.Stall()
	time.Sleep(30 * time.Second)
	proxy.Resume()
	resumed := time.Now()
	testutil.Eventually(t, 10*time.Second, func() error {
		for _, w := range writes(t, a.user) {
			if w.At.After(resumed) && w.Lease() {
				return nil
			}
		}
		return errors.New("the leader has not renewed since the API server answered")
	})
	for _, p := range []*process{a, b} {
		select {
		case <-p.Done():
			t.Fatalf("%s exited during the outage: %v\n%s", p.Pod, p.ExitErr(), operatorprocess.Tail(p.Output(), 2000))
		default:
		}
	}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: hoNamespace, Name: hyperv1.HypershiftOperatorLeaseName}, lease); err != nil {
		t.Fatal(err)
	}
	if h := ptr.Deref(lease.Spec.HolderIdentity, ""); h != a.Pod || ptr.Deref(lease.Spec.LeaseTransitions, 0) != transitions {
		t.Fatalf("holder %q transitions %d after the outage, want %s and %d", h, ptr.Deref(lease.Spec.LeaseTransitions, 0), a.Pod, transitions)
	}
	if w := writes(t, b.user); len(w) != 0 {
		t.Fatalf("the standby wrote: %v", w)
	}
}
