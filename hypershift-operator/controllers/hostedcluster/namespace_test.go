package hostedcluster_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/controllers/hostedcluster"
	"github.com/hypershift-le/hypershift/hypershift-operator/render"
	"github.com/hypershift-le/hypershift/support/testutil"
	"github.com/hypershift-le/hypershift/test/auditlog"
)

// namedNamespace creates a namespace with the given name for the test.
func namedNamespace(t *testing.T, name string, mutate func(*corev1.Namespace)) *corev1.Namespace {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if mutate != nil {
		mutate(ns)
	}
	if err := env.Client.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = env.Client.Delete(ctx, ns)
	})
	return ns
}

// collision names two HostedClusters, as namespace and name, that map to
// one control-plane namespace.
type collision struct {
	name        string
	first, next func(base string) (namespace, name string)
}

var collisions = []collision{
	{
		name:  "a-b/c and a/b-c",
		first: func(base string) (string, string) { return base + "-b", "c" },
		next:  func(base string) (string, string) { return base, "b-c" },
	},
	{
		name:  "a/b.c and a/b-c",
		first: func(base string) (string, string) { return base, "b.c" },
		next:  func(base string) (string, string) { return base, "b-c" },
	},
}

// TestControlPlaneNamespaceClaim checks that of two HostedClusters mapping to
// one control-plane namespace exactly one owns it, created one after the
// other in both orders or at the same moment; the other is refused, writes
// nothing into it, and is deleted without touching it.
func TestControlPlaneNamespaceClaim(t *testing.T) {
	for _, pair := range collisions {
		for _, order := range []string{"in order", "in reverse order"} {
			t.Run(pair.name+" created "+order, func(t *testing.T) {
				first, next := pair.first, pair.next
				if order == "in reverse order" {
					first, next = next, first
				}
				user := startOperator(t, func(r *hostedcluster.Reconciler) { r.Fencing = hostedcluster.Fencing{Enabled: true} })
				base := env.Namespace(t)
				owner := createIn(t, base, first)
				reportReady(t, owner, "4.17.0")
				awaitOwnerAvailable(t, owner)
				since := time.Now()

				refused := createIn(t, base, next)
				awaitRefused(t, refused, owner)
				checkOwned(t, owner, refused)
				time.Sleep(2 * time.Second) // any late write would land now
				checkNoWrites(t, user, owner.controlPlaneNamespace(), since)

				deleteRefused(t, refused, owner)
				checkNoWrites(t, user, owner.controlPlaneNamespace(), since)
				awaitOwnerAvailable(t, owner)
			})
		}
		t.Run(pair.name+" created at the same moment", func(t *testing.T) {
			startOperator(t, func(r *hostedcluster.Reconciler) { r.Fencing = hostedcluster.Fencing{Enabled: true} })
			base := env.Namespace(t)
			if strings.Contains(pair.name, "a-b/c") {
				namedNamespace(t, base+"-b", nil)
			}
			var wg sync.WaitGroup
			clusters := make([]*cluster, 2)
			for i, at := range []func(string) (string, string){pair.first, pair.next} {
				wg.Go(func() {
					namespace, name := at(base)
					clusters[i] = newClusterIn(t, namespace, name, "4.17.0", nil)
				})
			}
			wg.Wait()
			cpNamespace := clusters[0].controlPlaneNamespace()
			var owner, refused *cluster
			testutil.Eventually(t, converge, func() error {
				ns := &corev1.Namespace{}
				if err := env.Client.Get(t.Context(), client.ObjectKey{Name: cpNamespace}, ns); err != nil {
					return err
				}
				for i, c := range clusters {
					if ns.Annotations[hyperv1.ClusterAnnotation] == clusterKey(c) {
						owner, refused = c, clusters[1-i]
						return nil
					}
				}
				return fmt.Errorf("namespace %s names %q", cpNamespace, ns.Annotations[hyperv1.ClusterAnnotation])
			})
			awaitRefused(t, refused, owner)
			// The two are reconciled side by side: the owner's pass may
			// still be applying when the other is refused.
			reportReady(t, owner, "4.17.0")
			awaitOwnerAvailable(t, owner)
			checkOwned(t, owner, refused)
			deleteRefused(t, refused, owner)
		})
	}
}

// TestPreexistingNamespaceIsNotAdopted checks that a namespace that exists
// for another purpose, named like a control-plane namespace, is refused,
// left exactly as it was, and survives the HostedCluster's deletion.
func TestPreexistingNamespaceIsNotAdopted(t *testing.T) {
	user := startOperator(t, func(r *hostedcluster.Reconciler) { r.Fencing = hostedcluster.Fencing{Enabled: true} })
	base := env.Namespace(t)
	name := base + "-x"
	namedNamespace(t, name, func(ns *corev1.Namespace) {
		ns.Labels = map[string]string{"team": "data"}
		ns.Annotations = map[string]string{"owner": "data-team"}
	})
	configMap := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "precious"}, Data: map[string]string{"k": "v"}}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "worker"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.example/worker:1"}}},
	}
	for _, obj := range []client.Object{configMap, pod} {
		if err := env.Client.Create(t.Context(), obj); err != nil {
			t.Fatal(err)
		}
	}
	before := &corev1.Namespace{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, before); err != nil {
		t.Fatal(err)
	}
	since := time.Now()

	c := newClusterIn(t, base, "x", "4.17.0", nil)
	testutil.Eventually(t, converge, func() error {
		return checkRefusedBy(c.get(t), name, "")
	})
	refused := time.Now()
	time.Sleep(2 * time.Second)

	unchanged := func() {
		t.Helper()
		after := &corev1.Namespace{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, after); err != nil {
			t.Fatal(err)
		}
		if !after.DeletionTimestamp.IsZero() || after.ResourceVersion != before.ResourceVersion ||
			!equality.Semantic.DeepEqual(after.Labels, before.Labels) || !equality.Semantic.DeepEqual(after.Annotations, before.Annotations) {
			t.Fatalf("the namespace changed:\nbefore %v %v\nafter  %v %v (deleting: %v)", before.Labels, before.Annotations, after.Labels, after.Annotations, after.DeletionTimestamp)
		}
		for _, obj := range []client.Object{configMap, pod} {
			live := obj.DeepCopyObject().(client.Object)
			if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(obj), live); err != nil {
				t.Fatalf("%T %s: %v", obj, obj.GetName(), err)
			}
			if live.GetResourceVersion() != obj.GetResourceVersion() || !live.GetDeletionTimestamp().IsZero() {
				t.Fatalf("%T %s was changed", obj, obj.GetName())
			}
		}
		checkOneRefusedCreate(t, user, name, since)
		// Once its status shows the refusal, not even a refused request.
		checkNoWrites(t, user, name, refused)
	}
	unchanged()
	// Passes that start from the refusal read the namespace, they do not
	// try to create it again.
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(c.hc), c.hc); err != nil {
		t.Fatal(err)
	}
	if c.hc.Annotations == nil {
		c.hc.Annotations = map[string]string{}
	}
	c.hc.Annotations["test/poke"] = "1"
	poked := time.Now()
	if err := env.Client.Update(t.Context(), c.hc); err != nil {
		t.Fatal(err)
	}
	// The pass ran: it read the namespace from the API server.
	testutil.Eventually(t, converge, func() error {
		events, err := env.AuditEvents()
		if err != nil {
			return err
		}
		for _, e := range events {
			if e.User.Username == user && e.Verb == "get" && e.ObjectRef != nil && e.ObjectRef.Resource == "namespaces" &&
				e.ObjectRef.Name == name && !e.RequestReceivedTimestamp.Time.Before(poked) {
				return nil
			}
		}
		return fmt.Errorf("no pass has read namespace %s since the HostedCluster changed", name)
	})
	time.Sleep(2 * time.Second)
	unchanged()

	if err := env.Client.Delete(t.Context(), c.get(t)); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, converge, func() error {
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(c.hc), &hyperv1.HostedCluster{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the HostedCluster is still there (%w)", err)
		}
		return nil
	})
	time.Sleep(2 * time.Second)
	unchanged()
}

// createIn creates the HostedCluster at(base), creating its namespace when
// it is not base.
func createIn(t *testing.T, base string, at func(string) (string, string)) *cluster {
	t.Helper()
	namespace, name := at(base)
	if namespace != base {
		namedNamespace(t, namespace, nil)
	}
	return newClusterIn(t, namespace, name, "4.17.0", nil)
}

func clusterKey(c *cluster) string { return c.hc.Namespace + "/" + c.hc.Name }

// awaitOwnerAvailable waits until owner is Available and fenced.
func awaitOwnerAvailable(t *testing.T, owner *cluster) {
	t.Helper()
	testutil.Eventually(t, converge, func() error {
		hc := owner.get(t)
		if err := checkCondition(hc, hyperv1.Available, metav1.ConditionTrue); err != nil {
			return err
		}
		if err := checkCondition(hc, hyperv1.ValidConfiguration, metav1.ConditionTrue); err != nil {
			return err
		}
		return checkCondition(hc, hostedcluster.LeaderFencing, metav1.ConditionTrue)
	})
}

// awaitRefused waits until refused reports the conflict with owner, in its
// conditions and in one event.
func awaitRefused(t *testing.T, refused, owner *cluster) {
	t.Helper()
	testutil.Eventually(t, converge, func() error {
		return checkRefusedBy(refused.get(t), owner.controlPlaneNamespace(), clusterKey(owner))
	})
	testutil.Eventually(t, converge, func() error {
		list := &eventsv1.EventList{}
		if err := env.Client.List(t.Context(), list, client.InNamespace(refused.hc.Namespace)); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Regarding.Name == refused.hc.Name && e.Reason == hyperv1.ControlPlaneNamespaceConflictReason && e.Type == corev1.EventTypeWarning {
				return nil
			}
		}
		return errors.New("no ControlPlaneNamespaceConflict event")
	})
}

// checkRefusedBy checks the conditions of a HostedCluster refused because
// namespace ns is owner's ("" for none).
func checkRefusedBy(hc *hyperv1.HostedCluster, ns, owner string) error {
	want := hyperv1.ControlPlaneNamespaceConflictMessage(hc.Namespace+"/"+hc.Name, ns, owner)
	for _, conditionType := range []string{hyperv1.ValidConfiguration, hyperv1.Available, hyperv1.ReconciliationSucceeded} {
		if err := checkCondition(hc, conditionType, metav1.ConditionFalse); err != nil {
			return err
		}
		c := meta.FindStatusCondition(hc.Status.Conditions, conditionType)
		if c.Reason != hyperv1.ControlPlaneNamespaceConflictReason || c.Message != want {
			return fmt.Errorf("condition %s is %s: %q, want %s: %q", conditionType, c.Reason, c.Message, hyperv1.ControlPlaneNamespaceConflictReason, want)
		}
	}
	if !strings.Contains(want, ns) || (owner != "" && !strings.Contains(want, owner)) {
		return fmt.Errorf("message %q names neither the namespace nor the owner", want)
	}
	if hc.Status.ControlPlaneOperator != nil {
		return fmt.Errorf("a refused cluster shows the Lease of another: %+v", hc.Status.ControlPlaneOperator)
	}
	return nil
}

// checkOwned checks that every object in owner's namespace names owner, and
// that refused has no HostedControlPlane there.
func checkOwned(t *testing.T, owner, refused *cluster) {
	t.Helper()
	ns := owner.controlPlaneNamespace()
	key := clusterKey(owner)
	objects := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&hyperv1.HostedControlPlane{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: owner.hc.Name}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pull-secret"}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: hyperv1.ControlPlaneOperatorName}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: hyperv1.ControlPlaneOperatorName}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: hyperv1.ControlPlaneOperatorName}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: hyperv1.ControlPlaneOperatorName}},
	}
	for _, obj := range objects {
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(obj), obj); err != nil {
			t.Fatalf("%T %s: %v", obj, obj.GetName(), err)
		}
		if got := obj.GetAnnotations()[hyperv1.ClusterAnnotation]; got != key {
			t.Errorf("%T %s names %q, want the owner %q", obj, obj.GetName(), got, key)
		}
		if !obj.GetDeletionTimestamp().IsZero() {
			t.Errorf("%T %s is being deleted", obj, obj.GetName())
		}
	}
	deployment := objects[6].(*appsv1.Deployment)
	if args := deployment.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--hosted-control-plane="+owner.hc.Name) {
		t.Errorf("the CPO is not rendered for the owner's HostedControlPlane: %v", args)
	}
	if refused.hc.Name != owner.hc.Name {
		err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: refused.hc.Name}, &hyperv1.HostedControlPlane{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("the refused cluster has a HostedControlPlane in the owner's namespace (%v)", err)
		}
	}
}

// deleteRefused deletes the refused HostedCluster and checks it goes with
// its finalizer removed while the owner's namespace stays.
func deleteRefused(t *testing.T, refused, owner *cluster) {
	t.Helper()
	if err := env.Client.Delete(t.Context(), refused.get(t)); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, converge, func() error {
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(refused.hc), &hyperv1.HostedCluster{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the refused HostedCluster is still there (%w)", err)
		}
		return nil
	})
	time.Sleep(2 * time.Second)
	checkOwned(t, owner, refused)
}

// checkNoWrites fails on any write request by user, after since, into
// namespace ns, refused ones included (as writesInto counts them).
func checkNoWrites(t *testing.T, user, ns string, since time.Time) {
	t.Helper()
	if writes := writesInto(t, user, ns, since); len(writes) > 0 {
		t.Fatalf("the operator wrote %d times into namespace %s on behalf of the refused cluster:%s", len(writes), ns, describe(writes))
	}
}

// checkOneRefusedCreate fails unless user's only write request, after
// since, into namespace ns (as checkNoWrites counts them) is one create of
// the namespace itself that the API server refused because it exists: a new
// HostedCluster creates its namespace without reading it first, and learns
// from that refusal that it is another's.
func checkOneRefusedCreate(t *testing.T, user, ns string, since time.Time) {
	t.Helper()
	writes := writesInto(t, user, ns, since)
	if len(writes) == 1 && writes[0].Verb == "create" && writes[0].ObjectRef.Resource == "namespaces" &&
		auditlog.Code(writes[0]) == http.StatusConflict {
		return
	}
	t.Fatalf("the operator sent %d write requests into namespace %s on behalf of the refused cluster, want only one create of it refused with 409:%s", len(writes), ns, describe(writes))
}

// writesInto is every write request by user, after since, into namespace
// ns, to the namespace itself or to a fencing binding of that namespace
// alone (what earlier versions wrote per cluster); the shared fencing
// bindings, which the fencing controller keeps for every cluster, are no
// cluster's writes.
func writesInto(t *testing.T, user, ns string, since time.Time) []auditv1.Event {
	t.Helper()
	events, err := env.AuditEvents()
	if err != nil {
		t.Fatal(err)
	}
	var writes []auditv1.Event
	for _, e := range events {
		if e.User.Username != user || !auditlog.IsWrite(e) || e.RequestReceivedTimestamp.Time.Before(since) || e.ObjectRef == nil {
			continue
		}
		ref := e.ObjectRef
		if ref.Namespace == ns || (ref.Resource == "namespaces" && ref.Name == ns) ||
			(ref.Resource == "validatingadmissionpolicybindings" &&
				(ref.Name == render.NamespaceFencingBindingName(ns) || ref.Name == render.NamespaceClusterAPIFencingBindingName(ns))) {
			writes = append(writes, e)
		}
	}
	return writes
}
