package upsert_test

import (
	"errors"
	"os"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hypershift-le/hypershift/support/testutil"
	"github.com/hypershift-le/hypershift/support/upsert"
	"github.com/hypershift-le/hypershift/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, testenv.Options{AuditLog: true, SkipAdmissionPolicies: true}, &env))
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
	a := upsert.Applier{Client: c, FieldOwner: "upsert-test"}
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
		if e.User.Username == "upsert-test" && testenv.IsWrite(e) && e.RequestReceivedTimestamp.After(start) {
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
	user, err := env.AddUser("upsert-cached", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	informers, err := cache.New(user, cache.Options{Scheme: env.Scheme, DefaultNamespaces: map[string]cache.Config{ns: {}}})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = informers.Start(t.Context()) }()
	c, err := client.New(user, client.Options{Scheme: env.Scheme, Cache: &client.CacheOptions{Reader: informers}})
	if err != nil {
		t.Fatal(err)
	}
	a := upsert.Applier{Client: c, FieldOwner: "upsert-cached"}
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
