package testenv

import (
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hypershift-le/hypershift/support/testutil"
	"github.com/hypershift-le/hypershift/test/operatorprocess"
)

var env *Env

func TestMain(m *testing.M) {
	if os.Getenv(dieWithoutStopEnv) != "" {
		dieWithoutStop()
	}
	os.Exit(Main(m, Options{AuditLog: true, ControllerManager: true}, &env))
}

func TestAddUser(t *testing.T) {
	ns := env.Namespace(t)
	cfg, err := env.AddUser("alice", "team-a")
	if err != nil {
		t.Fatal(err)
	}
	alice, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	list := &corev1.ConfigMapList{}
	if err := alice.List(t.Context(), list, client.InNamespace(ns)); !apierrors.IsForbidden(err) {
		t.Fatalf("when no RBAC grants it, listing ConfigMaps should be forbidden, got %v", err)
	}
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "read-configmaps"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list"}}},
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "read-configmaps"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "team-a"}},
	}
	for _, obj := range []client.Object{role, binding} {
		if err := env.Client.Create(t.Context(), obj); err != nil {
			t.Fatal(err)
		}
	}
	// The authorizer learns of new bindings through its informers: poll.
	testutil.Eventually(t, 10*time.Second, func() error {
		return alice.List(t.Context(), list, client.InNamespace(ns))
	})
}

func TestAuditEvents(t *testing.T) {
	ns := env.Namespace(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "audited"}}
	if err := env.Client.Create(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	events, err := env.AuditEvents()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		if e.Verb == "create" && e.ObjectRef != nil && e.ObjectRef.Resource == "configmaps" &&
			e.ObjectRef.Namespace == ns && e.ObjectRef.Name == "audited" && e.ResponseStatus != nil && e.ResponseStatus.Code == 201 {
			return
		}
	}
	t.Fatalf("the audit log has no successful create of configmap %s/audited among %d events", ns, len(events))
}

func TestNamespace(t *testing.T) {
	a, b := env.Namespace(t), env.Namespace(t)
	if a == b {
		t.Fatalf("two calls returned the same namespace %s", a)
	}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: a}, &corev1.Namespace{}); err != nil {
		t.Fatalf("namespace %s does not exist: %v", a, err)
	}
}

func TestControllerManagerDeletesNamespaces(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "doomed-"}}
	if err := env.Client.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "content"}}
	if err := env.Client.Create(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(ns), &corev1.Namespace{})
		if apierrors.IsNotFound(err) {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("namespace %s was not removed within 60s; controller manager log:\n%s", ns.Name, operatorprocess.Tail(env.ControllerManagerLog(t.Context()), 3000))
}

// TestAuditEventsFollowRotation runs an API server that rotates its audit
// log at 1 MB: the events written before the rotation are still read, in
// order, and the log did rotate.
func TestAuditEventsFollowRotation(t *testing.T) {
	rotating, err := Start(t.Context(), Options{AuditLog: true, AuditLogMaxSizeMB: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rotating.Stop() })
	first := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "before-rotation"}}
	if err := rotating.Client.Create(t.Context(), first); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		backups, _ := filepath.Glob(strings.TrimSuffix(rotating.AuditLogPath, ".log") + "-*.log")
		if len(backups) > 0 {
			break
		}
		if i > 20000 {
			t.Fatal("the audit log did not rotate after 20,000 requests")
		}
		if err := rotating.Client.Get(t.Context(), client.ObjectKeyFromObject(first), &corev1.ConfigMap{}); err != nil {
			t.Fatal(err)
		}
	}
	events, err := rotating.AuditEvents()
	if err != nil {
		t.Fatal(err)
	}
	if len(events) == 0 || events[0].RequestReceivedTimestamp.After(events[len(events)-1].RequestReceivedTimestamp.Time) {
		t.Fatalf("%d events, out of order", len(events))
	}
	for _, e := range events {
		if e.Verb == "create" && e.ObjectRef != nil && e.ObjectRef.Name == "before-rotation" {
			return
		}
	}
	t.Fatalf("the create made before the rotation is missing from %d events", len(events))
}

// TestProcessIsThisControlPlanes: with a second control plane in the same
// binary, each Env finds its own kube-apiserver and etcd.
func TestProcessIsThisControlPlanes(t *testing.T) {
	other, err := Start(t.Context(), Options{SkipCRDs: true, SkipAdmissionPolicies: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := other.Stop(); err != nil {
			t.Error(err)
		}
	}()
	for _, name := range []string{"kube-apiserver", "etcd"} {
		mine, err := env.Process(name)
		if err != nil {
			t.Fatal(err)
		}
		theirs, err := other.Process(name)
		if err != nil {
			t.Fatal(err)
		}
		if mine.Pid == theirs.Pid {
			t.Errorf("both control planes found %s %d", name, mine.Pid)
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(theirs.Pid), "cmdline"))
		if err != nil {
			t.Fatal(err)
		}
		address := other.Config.Host
		if name == "etcd" {
			address = other.EtcdURL()
		}
		u, err := url.Parse(address)
		if err != nil {
			t.Fatal(err)
		}
		if port := u.Port(); port == "" || !strings.Contains(string(cmdline), port) {
			t.Errorf("the second control plane's %s (%d) does not run on the port of %s: %q", name, theirs.Pid, address, cmdline)
		}
	}
}
