package apply_test

import (
	"errors"
	"os"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hypershift-le/hypershift/support/apply"
	"github.com/hypershift-le/hypershift/support/testutil"
	"github.com/hypershift-le/hypershift/test/auditlog"
	"github.com/hypershift-le/hypershift/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, testenv.Options{AuditLog: true, SkipAdmissionPolicies: true}, &env))
}

// cachedClient is a manager-style client for user (a system:masters
// member it adds), reading from informers on namespace ns.
func cachedClient(t *testing.T, user, ns string) client.Client {
	t.Helper()
	cfg, err := env.AddUser(user, "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	informers, err := cache.New(cfg, cache.Options{Scheme: env.Scheme, DefaultNamespaces: map[string]cache.Config{ns: {}}})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = informers.Start(t.Context()) }()
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme, Cache: &client.CacheOptions{Reader: informers}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func deployment(ns string, replicas int32, env ...corev1.EnvVar) *appsv1.Deployment {
	labels := map[string]string{"app": "demo"}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "demo"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "demo", Image: "example.com/demo:1", Env: env,
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
				}}},
			},
		},
	}
}

func TestApply(t *testing.T) {
	ns := env.Namespace(t)
	user, err := env.AddUser("upsert-test", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(user, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	a := apply.Applier{Client: c, FieldOwner: "upsert-test"}
	apply := func(obj client.Object) bool {
		t.Helper()
		changed, err := a.Apply(t.Context(), obj)
		if err != nil {
			t.Fatal(err)
		}
		return changed
	}
	start := time.Now()

	if !apply(deployment(ns, 1, corev1.EnvVar{Name: "A", Value: "1"})) {
		t.Fatal("when the object does not exist, it must be applied")
	}
	if apply(deployment(ns, 1, corev1.EnvVar{Name: "A", Value: "1"})) {
		t.Fatal("when the live object already holds every field, nothing must be sent (the API server defaulted many fields)")
	}
	if !apply(deployment(ns, 2, corev1.EnvVar{Name: "A", Value: "1"})) {
		t.Fatal("when a field changes, it must be applied")
	}
	if !apply(deployment(ns, 2)) {
		t.Fatal("when a list shrinks, it must be applied")
	}
	live := &appsv1.Deployment{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "demo"}, live); err != nil {
		t.Fatal(err)
	}
	if *live.Spec.Replicas != 2 || len(live.Spec.Template.Spec.Containers[0].Env) != 0 {
		t.Fatalf("live object: replicas %d, env %v", *live.Spec.Replicas, live.Spec.Template.Spec.Containers[0].Env)
	}

	// The audit log agrees: three applies, nothing for the unchanged one.
	events, err := env.AuditEvents()
	if err != nil {
		t.Fatal(err)
	}
	writes := 0
	for _, e := range events {
		if e.User.Username == "upsert-test" && auditlog.IsWrite(e) && e.RequestReceivedTimestamp.After(start) {
			writes++
			if e.Verb != "patch" {
				t.Errorf("write %s, want server-side apply patches only", e.Verb)
			}
		}
	}
	if writes != 3 {
		t.Fatalf("the audit log shows %d writes, want 3", writes)
	}
}

// TestApplyReadsFromTheCache applies through a manager-style cached client:
// once converged, an apply makes no request at all, read or write, as the
// audit log shows.
func TestApplyReadsFromTheCache(t *testing.T) {
	ns := env.Namespace(t)
	c := cachedClient(t, "upsert-cached", ns)
	a := apply.Applier{Client: c, FieldOwner: "upsert-cached"}
	if _, err := a.Apply(t.Context(), deployment(ns, 1)); err != nil {
		t.Fatal(err)
	}
	// Wait until the cache holds the applied object.
	testutil.Eventually(t, 10*time.Second, func() error {
		changed, err := a.Apply(t.Context(), deployment(ns, 1))
		if err == nil && changed {
			err = errors.New("the apply was sent again")
		}
		return err
	})
	start := time.Now()
	for range 5 {
		if changed, err := a.Apply(t.Context(), deployment(ns, 1)); err != nil || changed {
			t.Fatalf("a converged apply: changed %v, %v", changed, err)
		}
	}
	time.Sleep(time.Second) // the audit log is written after the response
	events, err := env.AuditEvents()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		if e.User.Username == "upsert-cached" && e.RequestReceivedTimestamp.After(start) && e.Verb != "watch" {
			t.Errorf("a converged apply sent %s %s", e.Verb, e.RequestURI)
		}
	}
}

// TestApplyRepairsAStrategySwitchedByAnother checks that a Deployment whose
// strategy someone else switched to RollingUpdate (the API server then
// defaults strategy.rollingUpdate under their field manager) is brought back
// to Recreate, where a plain apply is refused for good; and that once
// repaired nothing more is sent.
func TestApplyRepairsAStrategySwitchedByAnother(t *testing.T) {
	ns := env.Namespace(t)
	a := apply.Applier{Client: env.Client, FieldOwner: "upsert-test"}
	if _, err := a.Apply(t.Context(), deployment(ns, 1)); err != nil {
		t.Fatal(err)
	}
	live := &appsv1.Deployment{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "demo"}, live); err != nil {
		t.Fatal(err)
	}
	patch := client.RawPatch(types.StrategicMergePatchType, []byte(`{"spec":{"strategy":{"type":"RollingUpdate"}}}`))
	if err := env.Client.Patch(t.Context(), live, patch, client.FieldOwner("kubectl-patch")); err != nil {
		t.Fatal(err)
	}
	if live.Spec.Strategy.RollingUpdate == nil {
		t.Fatal("the API server did not default strategy.rollingUpdate: the test does not reproduce the drift")
	}

	changed, err := a.Apply(t.Context(), deployment(ns, 1))
	if err != nil || !changed {
		t.Fatalf("the repair was not applied: changed=%v err=%v", changed, err)
	}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "demo"}, live); err != nil {
		t.Fatal(err)
	}
	if live.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType || live.Spec.Strategy.RollingUpdate != nil {
		t.Fatalf("strategy is %+v, want Recreate with no rollingUpdate", live.Spec.Strategy)
	}
	if changed, err := a.Apply(t.Context(), deployment(ns, 1)); err != nil || changed {
		t.Fatalf("a repaired Deployment must need nothing more: changed=%v err=%v", changed, err)
	}
}

// TestApplyReplacesListEntriesOfAnother checks that list entries another
// field manager added or re-keyed, which an apply cannot remove, are
// replaced by the desired list, and that nothing more is sent afterwards.
func TestApplyReplacesListEntriesOfAnother(t *testing.T) {
	tests := []struct {
		name   string
		object func(ns string) client.Object
		patch  client.Patch
		check  func(t *testing.T, ns string)
	}{
		{
			name:   "when someone changes a Service port (a new list-map key, and a duplicate name), it comes back",
			object: func(ns string) client.Object { return service(ns) },
			patch:  client.RawPatch(types.MergePatchType, []byte(`{"spec":{"ports":[{"name":"https","port":1,"targetPort":1}]}}`)),
			check: func(t *testing.T, ns string) {
				live := &corev1.Service{}
				if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "demo"}, live); err != nil {
					t.Fatal(err)
				}
				if p := live.Spec.Ports; len(p) != 1 || p[0].Port != 443 {
					t.Fatalf("ports %+v, want only 443", p)
				}
			},
		},
		{
			name:   "when someone adds a container to a Deployment, it goes",
			object: func(ns string) client.Object { return deployment(ns, 1) },
			patch:  client.RawPatch(types.StrategicMergePatchType, []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","image":"example.com/sidecar:1"}]}}}}`)),
			check: func(t *testing.T, ns string) {
				live := &appsv1.Deployment{}
				if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "demo"}, live); err != nil {
					t.Fatal(err)
				}
				if c := live.Spec.Template.Spec.Containers; len(c) != 1 || c[0].Name != "demo" {
					t.Fatalf("containers %v, want only demo", c)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := env.Namespace(t)
			a := apply.Applier{Client: env.Client, FieldOwner: "upsert-test"}
			if _, err := a.Apply(t.Context(), tt.object(ns)); err != nil {
				t.Fatal(err)
			}
			if err := env.Client.Patch(t.Context(), tt.object(ns), tt.patch, client.FieldOwner("tamperer")); err != nil {
				t.Fatal(err)
			}
			if changed, err := a.Apply(t.Context(), tt.object(ns)); err != nil || !changed {
				t.Fatalf("the repair was not sent: changed=%v err=%v", changed, err)
			}
			tt.check(t, ns)
			if changed, err := a.Apply(t.Context(), tt.object(ns)); err != nil || changed {
				t.Fatalf("a repaired object must need nothing more: changed=%v err=%v", changed, err)
			}
		})
	}
}

func service(ns string) *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "demo"},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "demo"},
			Ports:    []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromInt32(6443)}},
		},
	}
}

// TestApplyIntoShowsWhatTheAPIServerSet checks that ApplyInto fills in
// what the API server set on the write (a Service's ClusterIP) from its
// answer to the first apply, whatever the cache holds; that a converged apply
// fills it from the live object without a request; and that a repair
// shows the repaired object.
func TestApplyIntoShowsWhatTheAPIServerSet(t *testing.T) {
	ns := env.Namespace(t)
	c := cachedClient(t, "apply-into", ns)
	a := apply.Applier{Client: c, FieldOwner: "apply-into"}

	first := &corev1.Service{}
	if sent, err := a.ApplyInto(t.Context(), service(ns), first); err != nil || !sent {
		t.Fatalf("the first apply: sent %v, %v", sent, err)
	}
	if first.Spec.ClusterIP == "" || first.ResourceVersion == "" {
		t.Fatalf("the first apply's answer has ClusterIP %q, resourceVersion %q: want both set by the API server", first.Spec.ClusterIP, first.ResourceVersion)
	}

	// Once the cache holds it, nothing is sent and the live object is shown.
	var again corev1.Service
	testutil.Eventually(t, 10*time.Second, func() error {
		again = corev1.Service{}
		sent, err := a.ApplyInto(t.Context(), service(ns), &again)
		if err == nil && sent {
			err = errors.New("the apply was sent again")
		}
		return err
	})
	if again.Spec.ClusterIP != first.Spec.ClusterIP || again.ResourceVersion != first.ResourceVersion {
		t.Fatalf("a converged apply shows ClusterIP %q at %s, want %q at %s", again.Spec.ClusterIP, again.ResourceVersion, first.Spec.ClusterIP, first.ResourceVersion)
	}

	// A repair shows the repaired object: a container someone added is
	// removed by a patch after the apply, whose answer is the one shown.
	direct := apply.Applier{Client: env.Client, FieldOwner: "apply-into"}
	if _, err := direct.Apply(t.Context(), deployment(ns, 1)); err != nil {
		t.Fatal(err)
	}
	sidecar := client.RawPatch(types.StrategicMergePatchType, []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","image":"example.com/sidecar:1"}]}}}}`))
	if err := env.Client.Patch(t.Context(), deployment(ns, 1), sidecar, client.FieldOwner("tamperer")); err != nil {
		t.Fatal(err)
	}
	repaired := &appsv1.Deployment{}
	if sent, err := direct.ApplyInto(t.Context(), deployment(ns, 1), repaired); err != nil || !sent {
		t.Fatalf("the repair: sent %v, %v", sent, err)
	}
	if c := repaired.Spec.Template.Spec.Containers; len(c) != 1 || c[0].Name != "demo" {
		t.Fatalf("ApplyInto shows containers %v after the repair, want only demo", c)
	}
}
