package fencing_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/rbac"
	"github.com/hypershift-le/hypershift/hypershift-operator/render"
	"github.com/hypershift-le/hypershift/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, testenv.Options{AuditLog: true, SkipAdmissionPolicies: true}, &env))
}

// controlPlane is a namespace with the CPO's ServiceAccount, Role and
// RoleBinding, and the fencing binding.
func controlPlane(t *testing.T, holder *string) string {
	t.Helper()
	ctx := t.Context()
	if err := env.Client.Create(ctx, render.FencingPolicy()); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	ns := env.Namespace(t)
	objects := []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: hyperv1.ControlPlaneOperatorName}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: hyperv1.ControlPlaneOperatorName}, Rules: rbac.ControlPlaneOperatorRules()},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: hyperv1.ControlPlaneOperatorName},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: hyperv1.ControlPlaneOperatorName},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: hyperv1.ControlPlaneOperatorName}},
		},
		render.FencingBindingFor(ns, "clusters/test"),
	}
	if holder != nil {
		objects = append(objects, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: hyperv1.ControlPlaneOperatorLeaseName},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity: holder, LeaseDurationSeconds: ptr.To[int32](60),
				RenewTime: &metav1.MicroTime{Time: time.Now()},
			},
		})
	}
	for _, obj := range objects {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), render.FencingBindingFor(ns, ""))
	})
	return ns
}

// asPod returns a client that is the CPO ServiceAccount with a token bound
// to pod (pod "" carries no pod name, as a token from a Secret would not).
func asPod(t *testing.T, ns, pod string) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + ns + ":" + hyperv1.ControlPlaneOperatorName,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
	}
	if pod != "" {
		cfg.Impersonate.Extra = map[string][]string{"authentication.kubernetes.io/pod-name": {pod}}
	}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func service(ns, name string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 443}}},
	}
}

// denied waits until the policy is enforced (policies compile
// asynchronously) and returns the denial of c creating a Service.
func denied(t *testing.T, c client.Client, ns string) error {
	t.Helper()
	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		err = c.Create(t.Context(), service(ns, fmt.Sprintf("probe-%d", time.Now().UnixNano())))
		if err != nil && strings.Contains(err.Error(), render.FencingMessageMarker) {
			return err
		}
		if err != nil && !apierrors.IsForbidden(err) {
			t.Fatalf("unexpected error: %v", err)
		}
	}
	t.Fatalf("the write was never fenced; last result: %v", err)
	return nil
}

func TestFencing(t *testing.T) {
	t.Run("when a pod that does not hold the Lease writes, it is denied naming the holder and the pod", func(t *testing.T) {
		ns := controlPlane(t, ptr.To("cpo-a"))
		err := denied(t, asPod(t, ns, "cpo-b"), ns)
		want := "fenced: control-plane-operator pod cpo-b does not hold Lease " + ns + "/control-plane-operator-leader-elect (holder: cpo-a); only the holder may write"
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
			t.Fatalf("got %v, want a Forbidden error containing %q", err, want)
		}
		t.Run("when the holder writes, it is allowed", func(t *testing.T) {
			holder := asPod(t, ns, "cpo-a")
			svc := service(ns, "kube-apiserver")
			if err := holder.Create(t.Context(), svc); err != nil {
				t.Fatalf("the holder's create was refused: %v", err)
			}
			svc.Labels = map[string]string{"updated": "true"}
			if err := holder.Update(t.Context(), svc); err != nil {
				t.Fatalf("the holder's update was refused: %v", err)
			}
			if err := asPod(t, ns, "cpo-b").Delete(t.Context(), svc); err == nil || !strings.Contains(err.Error(), render.FencingMessageMarker) {
				t.Fatalf("a non-holder's delete: %v", err)
			}
			if err := holder.Delete(t.Context(), svc); err != nil {
				t.Fatalf("the holder's delete was refused: %v", err)
			}
		})
		t.Run("when a non-holder gets and updates the Lease, it is allowed (or no one could acquire)", func(t *testing.T) {
			other := asPod(t, ns, "cpo-b")
			lease := &coordinationv1.Lease{}
			if err := other.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: hyperv1.ControlPlaneOperatorLeaseName}, lease); err != nil {
				t.Fatal(err)
			}
			lease.Spec.HolderIdentity = ptr.To("cpo-b")
			lease.Spec.LeaseTransitions = ptr.To[int32](1)
			if err := other.Update(t.Context(), lease); err != nil {
				t.Fatalf("taking the Lease was refused: %v", err)
			}
			// Now cpo-b holds it, and cpo-a is the one fenced.
			err := denied(t, asPod(t, ns, "cpo-a"), ns)
			if !strings.Contains(err.Error(), "pod cpo-a does not hold Lease") || !strings.Contains(err.Error(), "(holder: cpo-b)") {
				t.Fatalf("got %v", err)
			}
			if err := other.Create(t.Context(), service(ns, "after-takeover")); err != nil {
				t.Fatalf("the new holder's write was refused: %v", err)
			}
		})
	})

	t.Run("when the Lease has been released (no holder), every CPO write is denied", func(t *testing.T) {
		ns := controlPlane(t, ptr.To(""))
		err := denied(t, asPod(t, ns, "cpo-a"), ns)
		if !strings.Contains(err.Error(), "(holder: <none>)") {
			t.Fatalf("got %v", err)
		}
	})

	t.Run("when the Lease does not exist, every write in the namespace is denied, and creating the Lease is allowed", func(t *testing.T) {
		ns := controlPlane(t, nil)
		c := asPod(t, ns, "cpo-a")
		var err error
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			if err = c.Create(t.Context(), service(ns, fmt.Sprintf("p-%d", time.Now().UnixNano()))); err != nil && strings.Contains(err.Error(), "no params found") {
				break
			}
		}
		if err == nil || !strings.Contains(err.Error(), "no params found") {
			t.Fatalf("got %v, want a denial for the missing Lease", err)
		}
		lease := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: hyperv1.ControlPlaneOperatorLeaseName},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("cpo-a"), LeaseDurationSeconds: ptr.To[int32](60), RenewTime: &metav1.MicroTime{Time: time.Now()}},
		}
		if err := env.Client.Create(t.Context(), service(ns, "admin-write")); err == nil || !strings.Contains(err.Error(), "no params found") {
			t.Fatalf("with the Lease missing, an admin's write must be refused too (why the HO creates the Lease first): %v", err)
		}
		if err := c.Create(t.Context(), lease); err != nil {
			t.Fatalf("acquiring a missing Lease was refused: %v", err)
		}
		if err := c.Create(t.Context(), service(ns, "first-write")); err != nil {
			t.Fatalf("the first holder's write was refused: %v", err)
		}
	})

	t.Run("when the token carries no pod name, the write is denied", func(t *testing.T) {
		ns := controlPlane(t, ptr.To("cpo-a"))
		err := denied(t, asPod(t, ns, ""), ns)
		if !strings.Contains(err.Error(), "<no pod name in token>") {
			t.Fatalf("got %v", err)
		}
	})

	t.Run("when another user writes in the namespace, the policy does not apply", func(t *testing.T) {
		ns := controlPlane(t, ptr.To("cpo-a"))
		_ = denied(t, asPod(t, ns, "cpo-b"), ns) // the policy is in force
		if err := env.Client.Create(t.Context(), service(ns, "admin-write")); err != nil {
			t.Fatalf("an admin's write was refused: %v", err)
		}
	})
}
