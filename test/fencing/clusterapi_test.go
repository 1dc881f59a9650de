package fencing_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/render"
)

// clusterAPIControlPlane is a control-plane namespace of platform Pod: the
// cluster-api manager's ServiceAccount, allowed to write Services (so that
// only the fence can refuse it), its Lease held by holder, and the
// cluster-api fencing policy and binding with the Lease guard.
func clusterAPIControlPlane(t *testing.T, holder string) string {
	t.Helper()
	ctx := t.Context()
	ns := fencedNamespace(t, render.ClusterAPIFencingPolicy(), render.ClusterAPIFencingBinding())
	for _, obj := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: hyperv1.ClusterAPIName}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: hyperv1.ClusterAPIName}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"get", "create", "patch", "delete"}},
			{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "update", "delete"}},
		}},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: hyperv1.ClusterAPIName},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: hyperv1.ClusterAPIName},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: hyperv1.ClusterAPIName}},
		},
		&coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: hyperv1.ClusterAPILeaseName},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To[int32](60),
				RenewTime: &metav1.MicroTime{Time: time.Now()},
			},
		},
	} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	return ns
}

// clusterAPIDenied waits until the policy is enforced and returns the
// denial of pod (of the cluster-api manager's ServiceAccount) creating a
// Service.
func clusterAPIDenied(t *testing.T, ns, pod string) error {
	t.Helper()
	c := env.AsPod(t, ns, hyperv1.ClusterAPIName, pod)
	return awaitRefusal(t, func() error {
		return c.Create(t.Context(), service(ns, fmt.Sprintf("probe-%d", time.Now().UnixNano())))
	}, render.ClusterAPIFencingMessageMarker)
}

func TestClusterAPIFencing(t *testing.T) {
	// controller-runtime's holder identity: the pod's hostname, "_", a UUID.
	const holderPod = "cluster-api-7c9d5b-x2k4q"
	const holder = holderPod + "_5f0c7e0a-2b1d-4c8e-9a57-0d6f1e2a3b4c"

	t.Run("when a cluster-api pod that does not hold the Lease writes, it is denied naming the holder and the pod", func(t *testing.T) {
		ns := clusterAPIControlPlane(t, holder)
		err := clusterAPIDenied(t, ns, "cluster-api-7c9d5b-zzzzz")
		want := "fenced: cluster-api pod cluster-api-7c9d5b-zzzzz does not hold Lease " + ns + "/controller-leader-election-capi (holder: " + holder + "); only the holder may write"
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
			t.Fatalf("got %v, want a Forbidden error containing %q", err, want)
		}
		t.Run("when the holder writes, it is allowed", func(t *testing.T) {
			c := env.AsPod(t, ns, hyperv1.ClusterAPIName, holderPod)
			svc := service(ns, "by-holder")
			if err := c.Create(t.Context(), svc); err != nil {
				t.Fatalf("the holder's create was refused: %v", err)
			}
			if err := c.Delete(t.Context(), svc); err != nil {
				t.Fatalf("the holder's delete was refused: %v", err)
			}
		})
		t.Run("when a pod's name is only a prefix of the holder's, it is denied", func(t *testing.T) {
			_ = clusterAPIDenied(t, ns, "cluster-api-7c9d5b")
			_ = clusterAPIDenied(t, ns, "cluster-api-7c9d5b-x2k4")
		})
		t.Run("when the token carries no pod name, it is denied", func(t *testing.T) {
			err := clusterAPIDenied(t, ns, "")
			if !strings.Contains(err.Error(), "<no pod name in token>") {
				t.Fatalf("got %v", err)
			}
		})
		t.Run("when a non-holder takes the Lease, it may write and the old holder may not", func(t *testing.T) {
			next := env.AsPod(t, ns, hyperv1.ClusterAPIName, "cluster-api-7c9d5b-zzzzz")
			lease := &coordinationv1.Lease{}
			if err := next.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: hyperv1.ClusterAPILeaseName}, lease); err != nil {
				t.Fatal(err)
			}
			lease.Spec.HolderIdentity = ptr.To("cluster-api-7c9d5b-zzzzz_0d6f1e2a")
			if err := next.Update(t.Context(), lease); err != nil {
				t.Fatalf("taking the Lease was refused: %v", err)
			}
			_ = clusterAPIDenied(t, ns, holderPod)
			if err := awaitSuccess(t, func() error { return next.Create(t.Context(), service(ns, "after-takeover")) }); err != nil {
				t.Fatalf("the new holder's write was refused: %v", err)
			}
		})
		t.Run("when another user writes, the policy does not apply", func(t *testing.T) {
			if err := env.Client.Create(t.Context(), service(ns, "admin-write")); err != nil {
				t.Fatalf("an admin's write was refused: %v", err)
			}
		})
	})

	t.Run("when the Lease has no holder yet, every cluster-api write is denied", func(t *testing.T) {
		ns := clusterAPIControlPlane(t, "")
		err := clusterAPIDenied(t, ns, holderPod)
		if !strings.Contains(err.Error(), "(holder: <none>)") {
			t.Fatalf("got %v", err)
		}
	})

	t.Run("when anyone deletes the cluster-api Lease while its namespace stays, the guard refuses it", func(t *testing.T) {
		ns := clusterAPIControlPlane(t, holder)
		lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: hyperv1.ClusterAPILeaseName}}
		want := "Lease " + hyperv1.ClusterAPILeaseName + " is the param of a fencing policy: it is deleted only with its control-plane namespace"
		for who, c := range map[string]client.Client{"an admin": env.Client, "the holder": env.AsPod(t, ns, hyperv1.ClusterAPIName, holderPod)} {
			err := awaitRefusal(t, func() error { return c.Delete(t.Context(), lease.DeepCopy(), client.DryRunAll) }, want)
			if !apierrors.IsForbidden(err) {
				t.Fatalf("%s deleting the Lease: got %v, want Forbidden", who, err)
			}
		}
	})
}
