package operator_test

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	horender "github.com/hypershift-le/hypershift/hypershift-operator/render"
	"github.com/hypershift-le/hypershift/support/config"
	"github.com/hypershift-le/hypershift/support/releaseinfo/releasetest"
	"github.com/hypershift-le/hypershift/test/testenv"
)

var (
	env    *testenv.Env
	binary string
)

// Test timings: short, and valid (4s > 3s > 1.2 * 1s).
const (
	leaseDuration = 4 * time.Second
	renewDeadline = 3 * time.Second
	retryPeriod   = time.Second
)

// TestMain builds the control-plane-operator binary from this repository and
// starts the test control plane with its audit log.
func TestMain(m *testing.M) {
	os.Exit(testenv.MainWithBinary(m, "github.com/hypershift-le/hypershift/control-plane-operator", &binary, testenv.Options{AuditLog: true}, &env))
}

// controlPlane is one control-plane namespace as the hypershift-operator
// leaves it: the HostedControlPlane, the pull secret and the CPO Role.
type controlPlane struct {
	namespace    string
	releaseImage string
	hcp          *hyperv1.HostedControlPlane
}

func newControlPlane(t *testing.T, withoutLeases bool) *controlPlane {
	t.Helper()
	registry := releasetest.NewRegistry(t)
	image, _ := registry.PushRelease(t, "ocp-release:4.17.0", "4.17.0", map[string]string{
		"hypershift": registry.Host() + "/hypershift:4.17.0",
		"etcd":       registry.Host() + "/etcd:4.17.0",
		"hyperkube":  registry.Host() + "/hyperkube:4.17.0",
	})
	ns := env.Namespace(t)
	cp := &controlPlane{namespace: ns, releaseImage: image}
	in := horender.Inputs{
		HostedCluster: &hyperv1.HostedCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: "demo"}},
		ReleaseImage:  image,
		Election:      config.DefaultControlPlaneOperatorElection,
	}
	role := horender.ControlPlaneOperatorRole(in)
	role.Namespace = ns
	role.Rules = append(role.Rules, componentRules...)
	if withoutLeases {
		var rules []rbacv1.PolicyRule
		for _, rule := range role.Rules {
			if rule.Resources[0] != "leases" {
				rules = append(rules, rule)
			}
		}
		role.Rules = rules
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pull-secret"},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: registry.DockerConfigJSON("u", "p")},
	}
	cp.hcp = &hyperv1.HostedControlPlane{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "demo"},
		Spec: hyperv1.HostedControlPlaneSpec{
			ReleaseImage: image,
			Platform:     hyperv1.PlatformSpec{Type: hyperv1.NonePlatform},
			PullSecret:   hyperv1.LocalObjectReference{Name: secret.Name},
		},
	}
	for _, obj := range []client.Object{role, secret, cp.hcp} {
		if err := env.Client.Create(t.Context(), obj); err != nil {
			t.Fatal(err)
		}
	}
	return cp
}

// componentRules are what the PKI and the components need beyond the
// Role the hypershift-operator renders today: the PKI's Secrets (watched,
// so a deleted one is re-created), etcd's StatefulSet and its
// PodDisruptionBudget. The hypershift-operator's Role must grant them.
var componentRules = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch"}},
	{APIGroups: []string{"apps"}, Resources: []string{"statefulsets"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
	{APIGroups: []string{"policy"}, Resources: []string{"poddisruptionbudgets"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
}

// cpo is one control-plane-operator process with a user of its own.
type cpo struct {
	pod, user string
	cmd       *exec.Cmd
	mu        sync.Mutex
	output    bytes.Buffer
	done      chan struct{}
	exitErr   error
	exitedAt  time.Time
}

func (c *cpo) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.output.Write(p)
}

func (c *cpo) log() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.output.String()
}

// exited waits up to timeout for the process to end.
func (c *cpo) exited(timeout time.Duration) bool {
	select {
	case <-c.done:
		return true
	case <-time.After(timeout):
		return false
	}
}

// startCPO runs `control-plane-operator run` as pod, authenticated as a user
// bound to the control-plane namespace's CPO Role.
func startCPO(t *testing.T, cp *controlPlane, pod string, operateOn string, extraArgs ...string) *cpo {
	t.Helper()
	user := "cpo-" + pod
	kubeconfig, err := env.AddUserKubeconfig(user)
	if err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: cp.namespace, Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: hyperv1.ControlPlaneOperatorName},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}
	if err := env.Client.Create(t.Context(), binding); err != nil {
		t.Fatal(err)
	}
	c := &cpo{pod: pod, user: user, done: make(chan struct{})}
	args := append([]string{"run",
		"--kubeconfig=" + kubeconfig,
		"--namespace=" + cp.namespace,
		"--leader-elect-lease-duration=" + leaseDuration.String(),
		"--leader-elect-renew-deadline=" + renewDeadline.String(),
		"--leader-elect-retry-period=" + retryPeriod.String(),
		"--leader-elect-resource-name=" + hyperv1.ControlPlaneOperatorLeaseName,
		"--metrics-bind-address=0",
		"--health-probe-bind-address=" + freeAddress(t),
	}, extraArgs...)
	c.cmd = exec.Command(binary, args...)
	c.cmd.Env = append(os.Environ(), "POD_NAME="+pod, "OPERATE_ON_RELEASE_IMAGE="+operateOn)
	c.cmd.Stdout, c.cmd.Stderr = c, c
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		c.exitErr = c.cmd.Wait()
		c.exitedAt = time.Now()
		close(c.done)
	}()
	t.Cleanup(func() {
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
		if !c.exited(20 * time.Second) {
			_ = c.cmd.Process.Kill()
			<-c.done
		}
		if t.Failed() {
			t.Logf("%s log:\n%s", pod, tail(c.log(), 3000))
		}
	})
	return c
}

func freeAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// holder returns the Lease's holder, "" when there is none.
func holder(t *testing.T, cp *controlPlane) string {
	lease := &coordinationv1.Lease{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: cp.namespace, Name: hyperv1.ControlPlaneOperatorLeaseName}, lease); err != nil || lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}

// awaitHolder waits until one of pods holds the Lease and returns it.
func awaitHolder(t *testing.T, cp *controlPlane, timeout time.Duration, pods ...string) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		h := holder(t, cp)
		for _, pod := range pods {
			if h == pod {
				return h
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("none of %v held the Lease within %s (holder %q)", pods, timeout, holder(t, cp))
	return ""
}

// auditWrite is one successful write from the audit log.
type auditWrite struct {
	at       time.Time
	user     string
	verb     string
	resource string
	name     string
}

func (w auditWrite) String() string {
	return fmt.Sprintf("%s %s %s %s/%s", w.at.Format("15:04:05.000"), w.user, w.verb, w.resource, w.name)
}

func (w auditWrite) isLease() bool { return w.resource == "leases" }

// successfulWrites returns the 2xx writes users made in namespace, in time
// order, from the API server's audit log.
func successfulWrites(t *testing.T, namespace string, users ...string) []auditWrite {
	t.Helper()
	events, err := env.AuditEvents()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, u := range users {
		want[u] = true
	}
	var out []auditWrite
	for _, e := range events {
		if !want[e.User.Username] || !testenv.IsWrite(e) || !testenv.Succeeded(e) || e.ObjectRef == nil || e.ObjectRef.Namespace != namespace {
			continue
		}
		out = append(out, toWrite(e))
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].at.Before(out[j].at) })
	return out
}

func toWrite(e auditv1.Event) auditWrite {
	resource := e.ObjectRef.Resource
	if e.ObjectRef.Subresource != "" {
		resource += "/" + e.ObjectRef.Subresource
	}
	return auditWrite{at: e.RequestReceivedTimestamp.Time, user: e.User.Username, verb: e.Verb, resource: resource, name: e.ObjectRef.Name}
}

// writesOutsideHoldings reconstructs, from the audit log alone, who held
// the Lease when: a successful Lease write by a user means that user held
// it then, and its holding lasts until another user's successful Lease
// write. It returns every other write made outside its user's holding.
func writesOutsideHoldings(writes []auditWrite) []auditWrite {
	var violations []auditWrite
	holderNow := ""
	for _, w := range writes {
		if w.isLease() {
			holderNow = w.user
			continue
		}
		if w.user != holderNow {
			violations = append(violations, w)
		}
	}
	return violations
}
