package fencing_test

import (
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	fencingctrl "github.com/hypershift-le/hypershift/hypershift-operator/controllers/fencing"
	"github.com/hypershift-le/hypershift/hypershift-operator/rbac"
	"github.com/hypershift-le/hypershift/hypershift-operator/render"
	"github.com/hypershift-le/hypershift/support/leaderelection"
)

// shardNamespace is a control-plane namespace of hypershift-operator shard
// shard of count, as the HostedCluster controller labels it, where the
// operator's ServiceAccount (in operatorNamespace) may create ConfigMaps.
func shardNamespace(t *testing.T, operatorNamespace string, shard, count int) string {
	t.Helper()
	ns := env.Namespace(t)
	env.LabelNamespace(t, ns, map[string]string{
		hyperv1.HostedControlPlaneLabel: "true",
		hyperv1.OperatorShardLabel:      leaderelection.Shard{Index: shard, Count: count}.Label(),
	})
	letOperatorCreate(t, ns, operatorNamespace, "configmaps")
	return ns
}

// letOperatorCreate lets the operator's ServiceAccount (in
// operatorNamespace) create resource in ns.
func letOperatorCreate(t *testing.T, ns, operatorNamespace, resource string) {
	t.Helper()
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: rbac.HypershiftOperatorName},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{resource}, Verbs: []string{"create"}}},
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: rbac.HypershiftOperatorName},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: operatorNamespace, Name: rbac.HypershiftOperatorName}},
	}
	for _, obj := range []client.Object{role, binding} {
		if err := env.Client.Create(t.Context(), obj); err != nil {
			t.Fatal(err)
		}
	}
}

// holdShard makes pod the holder of shard's Lease in operatorNamespace.
func holdShard(t *testing.T, operatorNamespace string, shard int, pod string) {
	t.Helper()
	holdLease(t, operatorNamespace, leaderelection.ShardLeaseName(hyperv1.HypershiftOperatorLeaseName, shard), pod)
}

// holdLease makes pod the holder of Lease operatorNamespace/name.
func holdLease(t *testing.T, operatorNamespace, name, pod string) {
	t.Helper()
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: name}}
	err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(lease), lease)
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	lease.Spec = coordinationv1.LeaseSpec{HolderIdentity: ptr.To(pod), LeaseDurationSeconds: ptr.To[int32](15), RenewTime: &metav1.MicroTime{Time: time.Now()}}
	if apierrors.IsNotFound(err) {
		err = env.Client.Create(t.Context(), lease)
	} else {
		err = env.Client.Update(t.Context(), lease)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// assertShardBindingsGone checks that the operator's fencing bindings of
// each of shards do not exist.
func assertShardBindingsGone(t *testing.T, shards ...int) {
	t.Helper()
	for _, i := range shards {
		for _, name := range render.OperatorShardBindingNames(i) {
			err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{})
			if !apierrors.IsNotFound(err) {
				t.Errorf("binding %s of shard %d: want NotFound, got %v", name, i, err)
			}
		}
	}
}

// TestOperatorShardFencing: with more than one shard, the API server
// refuses a hypershift-operator pod's writes in a control-plane namespace
// of a shard whose Lease it does not hold, a replica that lost the shard
// included; back to one shard, it judges them by the operator's own Lease,
// and without leader election, not at all.
func TestOperatorShardFencing(t *testing.T) {
	ctx := t.Context()
	operatorNamespace := env.Namespace(t)
	fencer := &fencingctrl.Reconciler{Client: env.Client, FieldOwner: "hypershift-operator", Namespace: operatorNamespace, Shards: 2, Elected: true}
	if _, err := fencer.Reconcile(ctx, reconcile.Request{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		fencer.Elected = false
		_, _ = fencer.Reconcile(ctx, reconcile.Request{})
	})
	shard0 := shardNamespace(t, operatorNamespace, 0, 2)
	shard1 := shardNamespace(t, operatorNamespace, 1, 2)
	holdShard(t, operatorNamespace, 0, "ho-a")
	holdShard(t, operatorNamespace, 1, "ho-b")
	operator := func(pod string) client.Client {
		return env.AsPod(t, operatorNamespace, rbac.HypershiftOperatorName, pod)
	}
	write := func(c client.Client, ns string) func() error {
		return func() error {
			return c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "shard-write-"}})
		}
	}
	refusedFor := func(pod, ns string, shard int, holder string) {
		t.Helper()
		err := awaitRefusal(t, write(operator(pod), ns), render.OperatorFencingMessageMarker+" "+pod)
		if !apierrors.IsForbidden(err) {
			t.Errorf("want 403 Forbidden, got %v", err)
		}
		lease := operatorNamespace + "/" + leaderelection.ShardLeaseName(hyperv1.HypershiftOperatorLeaseName, shard)
		if msg := err.Error(); !strings.Contains(msg, lease) || !strings.Contains(msg, "(holder: "+holder+")") || !strings.Contains(msg, ns) {
			t.Errorf("the refusal names neither Lease %s, holder %s and namespace %s: %v", lease, holder, ns, err)
		}
	}
	allowed := func(pod, ns string) {
		t.Helper()
		if err := awaitSuccess(t, write(operator(pod), ns)); err != nil {
			t.Fatalf("pod %s may not write in namespace %s: %v", pod, ns, err)
		}
	}

	t.Run("each shard's namespaces take writes from its holder only", func(t *testing.T) {
		refusedFor("ho-b", shard0, 0, "ho-a")
		refusedFor("ho-a", shard1, 1, "ho-b")
		allowed("ho-a", shard0)
		allowed("ho-b", shard1)
		// Without a pod-bound token, nobody holds.
		err := awaitRefusal(t, write(operator(""), shard0), render.OperatorFencingMessageMarker)
		if !strings.Contains(err.Error(), "<no pod name in token>") {
			t.Errorf("the refusal does not say the token names no pod: %v", err)
		}
		// Others are not the policy's business.
		if err := write(env.Client, shard0)(); err != nil {
			t.Errorf("an administrator may not write in a shard's namespace: %v", err)
		}
	})

	t.Run("a shard's objects in other namespaces take writes from its holder only", func(t *testing.T) {
		// A namespace of HostedClusters, not a control-plane namespace:
		// what is judged is the object's label.
		ns := env.Namespace(t)
		letOperatorCreate(t, ns, operatorNamespace, "secrets")
		secret := func(shard string) func(c client.Client) func() error {
			return func(c client.Client) func() error {
				return func() error {
					return c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "kubeconfig-", Labels: map[string]string{hyperv1.OperatorShardLabel: shard}}})
				}
			}
		}
		err := awaitRefusal(t, secret("0-of-2")(operator("ho-b")), render.OperatorFencingMessageMarker+" ho-b")
		if !strings.Contains(err.Error(), "(holder: ho-a)") || !strings.Contains(err.Error(), "secrets "+ns+"/") {
			t.Errorf("the refusal names neither the holder ho-a nor the secret: %v", err)
		}
		if err := awaitSuccess(t, secret("0-of-2")(operator("ho-a"))); err != nil {
			t.Errorf("the holder may not write its shard's Secret: %v", err)
		}
		// Unlabelled, and labelled under another count: not judged.
		for _, shard := range []string{"", "0-of-3"} {
			labels := map[string]string{}
			if shard != "" {
				labels[hyperv1.OperatorShardLabel] = shard
			}
			if err := operator("ho-b").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "other-", Labels: labels}}); err != nil {
				t.Errorf("a Secret labelled %q is judged: %v", shard, err)
			}
		}
	})

	t.Run("a replica that lost its shard is refused", func(t *testing.T) {
		holdShard(t, operatorNamespace, 0, "ho-b")
		refusedFor("ho-a", shard0, 0, "ho-b")
		allowed("ho-b", shard0)
	})

	t.Run("a namespace labelled under another count is judged by no binding", func(t *testing.T) {
		other := shardNamespace(t, operatorNamespace, 0, 3)
		allowed("ho-a", other)
	})

	t.Run("back to one shard, the operator's own Lease judges", func(t *testing.T) {
		fencer.Shards = 1
		if _, err := fencer.Reconcile(ctx, reconcile.Request{}); err != nil {
			t.Fatal(err)
		}
		assertShardBindingsGone(t, 1)
		// Labelled under two shards: judged by no binding now (ho-b holds
		// shard 0's Lease since a subtest above; ho-a is refused by it).
		allowed("ho-a", shard0)
		whole := shardNamespace(t, operatorNamespace, 0, 1)
		holdLease(t, operatorNamespace, hyperv1.HypershiftOperatorLeaseName, "ho-a")
		err := awaitRefusal(t, write(operator("ho-b"), whole), render.OperatorFencingMessageMarker+" ho-b")
		lease := operatorNamespace + "/" + hyperv1.HypershiftOperatorLeaseName
		if msg := err.Error(); !strings.Contains(msg, lease) || !strings.Contains(msg, "(holder: ho-a)") {
			t.Errorf("the refusal names neither Lease %s nor holder ho-a: %v", lease, err)
		}
		allowed("ho-a", whole)
	})

	t.Run("without leader election, the bindings are deleted and judge nothing", func(t *testing.T) {
		fencer.Elected = false
		if _, err := fencer.Reconcile(ctx, reconcile.Request{}); err != nil {
			t.Fatal(err)
		}
		assertShardBindingsGone(t, 0, 1)
		allowed("ho-a", shard0)
		allowed("ho-b", shardNamespace(t, operatorNamespace, 0, 1))
	})

	t.Run("with fencing off, the bindings a fenced run left are deleted", func(t *testing.T) {
		fencer.Elected, fencer.Shards = true, 2
		if _, err := fencer.Reconcile(ctx, reconcile.Request{}); err != nil {
			t.Fatal(err)
		}
		refusedFor("ho-a", shard0, 0, "ho-b")
		// Another binding is not the operator's to delete.
		other := render.OperatorShardBindings(0, "0-of-2", operatorNamespace, "unrelated")[0]
		other.Name = "unrelated-" + operatorNamespace
		if err := env.Client.Create(ctx, other); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(ctx, other) })
		if err := (fencingctrl.Unfenced{Reader: env.Client, Client: env.Client}).Remove(ctx); err != nil {
			t.Fatal(err)
		}
		assertShardBindingsGone(t, 0, 1)
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(other), &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}); err != nil {
			t.Errorf("binding %s, not the operator's, is gone: %v", other.Name, err)
		}
		allowed("ho-a", shard0)
	})
}
