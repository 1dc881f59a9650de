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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/rbac"
	"github.com/hypershift-le/hypershift/hypershift-operator/render"
	"github.com/hypershift-le/hypershift/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, testenv.Options{AuditLog: true, SkipAdmissionPolicies: true, ControllerManager: true}, &env))
}

// fencedNamespace is a new namespace labelled as a control-plane
// namespace and as fenced, with policy, its shared binding (as the
// hypershift-operator applies them) and the cluster-wide Lease guard in
// place.
func fencedNamespace(t *testing.T, policy, binding client.Object) string {
	t.Helper()
	for _, obj := range []client.Object{policy, binding, render.LeaseGuardPolicy(), render.LeaseGuardBinding()} {
		if err := env.Client.Create(t.Context(), obj); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	ns := env.Namespace(t)
	env.LabelNamespace(t, ns, map[string]string{hyperv1.HostedControlPlaneLabel: "true", render.LeaderFencingLabel: "true"})
	return ns
}

// unfence removes namespace ns from the fencing bindings' selection, as
// the hypershift-operator does with fencing off.
func unfence(t *testing.T, ns string) {
	t.Helper()
	namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	patch := []byte(`{"metadata":{"labels":{"` + render.LeaderFencingLabel + `":null}}}`)
	if err := env.Client.Patch(t.Context(), namespace, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
}

// controlPlane is a namespace labelled as a fenced control-plane namespace,
// with the CPO's ServiceAccount, Role and RoleBinding, and the cluster-wide
// fencing policy, its binding and the Lease guard.
func controlPlane(t *testing.T, holder *string) string {
	t.Helper()
	ctx := t.Context()
	ns := fencedNamespace(t, render.FencingPolicy(), render.FencingBinding())
	objects := []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: hyperv1.ControlPlaneOperatorName}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: hyperv1.ControlPlaneOperatorName}, Rules: rbac.ControlPlaneOperatorRules()},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: hyperv1.ControlPlaneOperatorName},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: hyperv1.ControlPlaneOperatorName},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: hyperv1.ControlPlaneOperatorName}},
		},
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
	return ns
}

// asPod returns a client that is the CPO ServiceAccount with a token bound
// to pod.
func asPod(t *testing.T, ns, pod string) client.Client {
	t.Helper()
	return env.AsPod(t, ns, hyperv1.ControlPlaneOperatorName, pod)
}

func service(ns, name string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 443}}},
	}
}

// awaitRefusal retries do (policies compile asynchronously) until it
// fails with a message containing want, and returns that error.
func awaitRefusal(t *testing.T, do func() error, want string) error {
	t.Helper()
	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if err = do(); err != nil && strings.Contains(err.Error(), want) {
			return err
		}
	}
	t.Fatalf("never refused with %q; last result: %v", want, err)
	return nil
}

// awaitSuccess retries do for up to 30s until it succeeds, and returns its
// last error.
func awaitSuccess(t *testing.T, do func() error) error {
	t.Helper()
	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if err = do(); err == nil {
			return nil
		}
	}
	return err
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
			patch := client.MergeFrom(svc.DeepCopy())
			svc.Labels = map[string]string{"updated": "true"}
			if err := holder.Patch(t.Context(), svc, patch); err != nil {
				t.Fatalf("the holder's patch was refused: %v", err)
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

	t.Run("when the Lease does not exist, no one's write is refused for it, and creating the Lease is allowed", func(t *testing.T) {
		ns := controlPlane(t, ptr.To("cpo-a"))
		_ = denied(t, asPod(t, ns, "cpo-b"), ns) // the fencing binding is in force
		// Only the guard keeps the Lease in place: lift it to delete it.
		if err := env.Client.Delete(t.Context(), render.LeaseGuardBinding()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Create(context.Background(), render.LeaseGuardBinding()) })
		lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: hyperv1.ControlPlaneOperatorLeaseName}}
		if err := awaitSuccess(t, func() error { return env.Client.Delete(t.Context(), lease.DeepCopy()) }); err != nil {
			t.Fatal(err)
		}
		// Once the API server sees no param, the binding judges nothing: the
		// write that was fenced goes through (with Deny it would be refused
		// "no params found", and so would everyone's).
		if err := awaitSuccess(t, func() error {
			return asPod(t, ns, "cpo-b").Create(t.Context(), service(ns, fmt.Sprintf("p-%d", time.Now().UnixNano())))
		}); err != nil {
			t.Fatalf("with the Lease missing, writes are still refused: %v", err)
		}
		if err := env.Client.Create(t.Context(), service(ns, "admin-write")); err != nil {
			t.Fatalf("with the Lease missing, an admin's write was refused (the namespace would freeze): %v", err)
		}
		c := asPod(t, ns, "cpo-a")
		lease = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: hyperv1.ControlPlaneOperatorLeaseName},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("cpo-a"), LeaseDurationSeconds: ptr.To[int32](60), RenewTime: &metav1.MicroTime{Time: time.Now()}},
		}
		if err := c.Create(t.Context(), lease); err != nil {
			t.Fatalf("acquiring a missing Lease was refused: %v", err)
		}
		if err := c.Create(t.Context(), service(ns, "first-write")); err != nil {
			t.Fatalf("the first holder's write was refused: %v", err)
		}
	})

	t.Run("when anyone deletes the Lease while its namespace stays, the guard refuses it", func(t *testing.T) {
		ns := controlPlane(t, ptr.To("cpo-a"))
		lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: hyperv1.ControlPlaneOperatorLeaseName}}
		err := awaitRefusal(t, func() error { return env.Client.Delete(t.Context(), lease.DeepCopy(), client.DryRunAll) }, "deleted only with its control-plane namespace")
		if !apierrors.IsForbidden(err) {
			t.Fatalf("an admin deleting the Lease: got %v, want Forbidden", err)
		}
		// A CPO pod may not delete it either (its Role has no delete).
		if err := asPod(t, ns, "cpo-a").Delete(t.Context(), lease.DeepCopy(), client.DryRunAll); !apierrors.IsForbidden(err) {
			t.Fatalf("the holder deleting the Lease: got %v, want Forbidden", err)
		}
	})

	t.Run("when the namespace is deleted, it goes; until then a CPO pod may only delete and finalize", func(t *testing.T) {
		ns := controlPlane(t, ptr.To("cpo-a"))
		_ = denied(t, asPod(t, ns, "cpo-b"), ns)
		held := service(ns, "held")
		if err := env.Client.Create(t.Context(), held); err != nil {
			t.Fatal(err)
		}
		// Hold the Service, and the CPO's RBAC, so that only the guard
		// can refuse the CPO's writes while the namespace terminates.
		hold := []client.Object{
			held,
			&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: hyperv1.ControlPlaneOperatorName}},
			&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: hyperv1.ControlPlaneOperatorName}},
		}
		for _, obj := range hold {
			patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":["test.hypershift.openshift.io/hold"]}}`))
			if err := env.Client.Patch(t.Context(), obj, patch); err != nil {
				t.Fatal(err)
			}
		}
		if err := env.Client.Delete(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
		// The namespace controller removes the Lease (and the rest) while
		// the held Service keeps the namespace Terminating.
		leaseKey := client.ObjectKey{Namespace: ns, Name: hyperv1.ControlPlaneOperatorLeaseName}
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			err := env.Client.Get(t.Context(), leaseKey, &coordinationv1.Lease{})
			if apierrors.IsNotFound(err) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the namespace controller did not delete the Lease (%v):\n%s", err, env.ControllerManagerLog(t.Context()))
			}
		}
		for _, pod := range []string{"cpo-a", "cpo-b"} {
			err := awaitRefusal(t, func() error {
				svc := &corev1.Service{}
				if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(held), svc); err != nil {
					return err
				}
				patch := client.MergeFrom(svc.DeepCopy())
				svc.Labels = map[string]string{"by": pod}
				return asPod(t, ns, pod).Patch(t.Context(), svc, patch)
			}, "which is being deleted")
			if !apierrors.IsForbidden(err) {
				t.Fatalf("%s updating in a namespace being deleted, with no Lease: got %v, want Forbidden", pod, err)
			}
		}
		if err := asPod(t, ns, "cpo-b").Delete(t.Context(), service(ns, "held")); err != nil {
			t.Fatalf("a CPO pod's delete in a namespace being deleted was refused: %v", err)
		}
		for _, obj := range hold {
			patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
			if err := env.Client.Patch(t.Context(), obj, patch); err != nil {
				t.Fatalf("the admin's write in a namespace being deleted was refused: %v", err)
			}
		}
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			err := env.Client.Get(t.Context(), client.ObjectKey{Name: ns}, &corev1.Namespace{})
			if apierrors.IsNotFound(err) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the namespace is still there after 60s (%v)", err)
			}
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

// TestFenceJudgesControlPlaneNamespacesOnly: the policy's constraints select
// namespaces labelled as control-plane namespaces, so that the API server
// matches its bindings (one per control-plane namespace, each costing every
// matched request a selector parse) only for writes there, not for every
// namespaced write on the management cluster. A namespace without the
// label is not judged even with a binding naming it; the HO keeps the label
// on the namespaces it owns, and no CPO Role can change a Namespace.
func TestFenceJudgesControlPlaneNamespacesOnly(t *testing.T) {
	ns := controlPlane(t, ptr.To("cpo-a"))
	nonHolder := asPod(t, ns, "cpo-b")
	if err := denied(t, nonHolder, ns); !strings.Contains(err.Error(), "does not hold Lease") {
		t.Fatalf("the non-holder was refused with %v, want the fence's refusal", err)
	}
	namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	if err := env.Client.Patch(t.Context(), namespace, client.RawPatch(types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"`+hyperv1.HostedControlPlaneLabel+`":null}}}`))); err != nil {
		t.Fatal(err)
	}
	if err := awaitSuccess(t, func() error {
		return nonHolder.Create(t.Context(), service(ns, fmt.Sprintf("elsewhere-%d", time.Now().UnixNano())))
	}); err != nil {
		t.Fatalf("a write in a namespace that is not a control-plane namespace is still judged: %v", err)
	}
}
