package fencetrust

import (
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/controllers/hostedcluster"
	"github.com/hypershift-le/hypershift/hypershift-operator/controllers/hostedcluster/hostedclustertest"
	"github.com/hypershift-le/hypershift/hypershift-operator/rbac"
	"github.com/hypershift-le/hypershift/hypershift-operator/render"
	"github.com/hypershift-le/hypershift/support/releaseinfo/releasetest"
	"github.com/hypershift-le/hypershift/support/testutil"
	"github.com/hypershift-le/hypershift/test/auditlog"
	"github.com/hypershift-le/hypershift/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, testenv.Options{AuditLog: true, ControllerManager: true}, &env))
}

const converge = 30 * time.Second

var users atomic.Int32

// startOperator runs the HO with fencing as a user of its own bound to its
// ClusterRole; it returns the user and a function that stops it.
func startOperator(t *testing.T) (string, func()) {
	t.Helper()
	user := fmt.Sprintf("hypershift-operator-%d", users.Add(1))
	cfg, err := env.AddUser(user)
	if err != nil {
		t.Fatal(err)
	}
	hostedclustertest.BindClusterRole(t, env, user)
	stop := hostedclustertest.StartOperator(t, cfg, func(r *hostedcluster.Reconciler) { r.Fencing = hostedcluster.Fencing{Enabled: true} })
	return user, stop
}

// cluster is a HostedCluster under test.
type cluster struct {
	hc *hyperv1.HostedCluster
}

func (c *cluster) namespace() string { return hyperv1.ControlPlaneNamespace(c.hc.Namespace, c.hc.Name) }

func (c *cluster) get(t *testing.T) *hyperv1.HostedCluster {
	t.Helper()
	hc := &hyperv1.HostedCluster{}
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(c.hc), hc); err != nil {
		t.Fatal(err)
	}
	return hc
}

// createCluster creates HostedCluster namespace/name with a pull secret and
// a release payload in a registry of its own.
func createCluster(t *testing.T, namespace, name string) *cluster {
	t.Helper()
	registry := releasetest.NewRegistry(t)
	image, _ := registry.PushRelease(t, "ocp-release:4.17.0", "4.17.0", map[string]string{"hypershift": registry.Host() + "/hypershift:4.17.0"})
	if err := env.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name + "-pull-secret"},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: registry.DockerConfigJSON("u", "p")},
	}
	if err := env.Client.Create(t.Context(), secret); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	c := &cluster{hc: &hyperv1.HostedCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: hyperv1.HostedClusterSpec{
			Release:    hyperv1.Release{Image: image},
			Platform:   hyperv1.PlatformSpec{Type: hyperv1.NonePlatform},
			PullSecret: hyperv1.LocalObjectReference{Name: secret.Name},
			Services:   hyperv1.NodePortServices("127.0.0.1", 0),
		},
	}}
	if err := env.Client.Create(t.Context(), c.hc); err != nil {
		t.Fatal(err)
	}
	return c
}

// deleteCluster deletes a HostedCluster through its operator and waits
// until it and its namespace are gone.
func deleteCluster(t *testing.T, c *cluster) {
	t.Helper()
	if err := env.Client.Delete(t.Context(), c.get(t)); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 2*converge, func() error {
		for _, obj := range []client.Object{
			&hyperv1.HostedCluster{ObjectMeta: c.hc.ObjectMeta},
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.namespace()}},
		} {
			if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(obj), obj); !apierrors.IsNotFound(err) {
				return fmt.Errorf("%T %s is still there (%w)", obj, obj.GetName(), err)
			}
		}
		return nil
	})
}

// holdLease makes pod the holder of the cluster's Lease, as a CPO that
// takes it would.
func holdLease(t *testing.T, c *cluster, pod string) {
	t.Helper()
	testutil.Eventually(t, converge, func() error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			lease := &coordinationv1.Lease{}
			if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: c.namespace(), Name: hyperv1.ControlPlaneOperatorLeaseName}, lease); err != nil {
				return err
			}
			lease.Spec.HolderIdentity = ptr.To(pod)
			lease.Spec.LeaseDurationSeconds = ptr.To[int32](3600)
			lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
			return env.Client.Update(t.Context(), lease)
		})
	})
}

// awaitFencing waits until LeaderFencing has status and reason.
func awaitFencing(t *testing.T, c *cluster, status metav1.ConditionStatus, reason string) *metav1.Condition {
	t.Helper()
	var got *metav1.Condition
	testutil.Eventually(t, converge, func() error {
		got = meta.FindStatusCondition(c.get(t).Status.Conditions, hostedcluster.LeaderFencing)
		if got == nil || got.Status != status || got.Reason != reason {
			return fmt.Errorf("LeaderFencing %+v, want %s %s", got, status, reason)
		}
		return nil
	})
	return got
}

// write creates a Service as a CPO pod, for real, and returns the error.
func write(t *testing.T, c *cluster, pod string) error {
	t.Helper()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.namespace(), GenerateName: "write-"},
		Spec:       corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Ports: []corev1.ServicePort{{Port: 1}}},
	}
	return env.AsPod(t, c.namespace(), hyperv1.ControlPlaneOperatorName, pod).Create(t.Context(), svc)
}

// checkJudged checks, once the operator has observed the fence in force for
// holder, with one real write each and the audit log as witness, that the
// holder's write is admitted and the other's refused by the fence.
func checkJudged(t *testing.T, c *cluster, holder, other string) {
	t.Helper()
	awaitFencing(t, c, metav1.ConditionTrue, "AsExpected")
	since := time.Now()
	if err := write(t, c, holder); err != nil {
		t.Fatalf("the holder %s was refused: %v", holder, err)
	}
	if err := write(t, c, other); err == nil || !strings.Contains(err.Error(), render.FencingMessageMarker) {
		t.Fatalf("%s, which does not hold the Lease, was not fenced: %v", other, err)
	}
	events, err := env.AuditEvents()
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]map[int32]int{holder: {}, other: {}}
	for _, e := range events {
		user := e.User
		if e.ImpersonatedUser != nil {
			user = *e.ImpersonatedUser
		}
		pods := user.Extra["authentication.kubernetes.io/pod-name"]
		if e.RequestReceivedTimestamp.Time.Before(since) || e.ObjectRef == nil || e.ObjectRef.Namespace != c.namespace() ||
			e.Verb != "create" || e.ObjectRef.Resource != "services" || len(pods) != 1 || codes[pods[0]] == nil {
			continue
		}
		codes[pods[0]][e.ResponseStatus.Code]++
	}
	if codes[holder][201] != 1 || codes[other][403] != 1 || codes[other][201] > 0 {
		t.Fatalf("the audit log shows the holder %s answered %v and %s answered %v", holder, codes[holder], other, codes[other])
	}
}

// TestFencingPolicyDeleted deletes the fencing policy: it is back within
// 5s; while the operator cannot re-create it, LeaderFencing is False on
// every HostedCluster; afterwards the holder writes and others are refused.
func TestFencingPolicyDeleted(t *testing.T) {
	user, _ := startOperator(t)
	clusters := []*cluster{createCluster(t, "policy-a", "one"), createCluster(t, "policy-b", "two")}
	for i, c := range clusters {
		holdLease(t, c, fmt.Sprintf("cpo-%d", i))
		awaitFencing(t, c, metav1.ConditionTrue, "AsExpected")
	}

	deleted := time.Now()
	if err := env.Client.Delete(t.Context(), render.FencingPolicy()); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, func() error {
		return env.Client.Get(t.Context(), client.ObjectKey{Name: render.FencingPolicyName}, &admissionregistrationv1.ValidatingAdmissionPolicy{})
	})
	t.Logf("the fencing policy was back after %s", time.Since(deleted).Round(time.Millisecond))

	// Take the operator's right to write admission policies, and delete it
	// again: every HostedCluster must say it is not fenced.
	withoutPolicies := rbac.ClusterRole()
	withoutPolicies.Name = "without-admission-policies"
	var rules []rbacv1.PolicyRule
	for _, rule := range withoutPolicies.Rules {
		if len(rule.APIGroups) == 0 || rule.APIGroups[0] != "admissionregistration.k8s.io" {
			rules = append(rules, rule)
		}
	}
	withoutPolicies.Rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"validatingadmissionpolicies", "validatingadmissionpolicybindings"}, Verbs: []string{"get", "list", "watch"}})
	if err := env.Client.Create(t.Context(), withoutPolicies); err != nil {
		t.Fatal(err)
	}
	rebind(t, user, withoutPolicies.Name, false)
	deletedAgain := time.Now()
	if err := env.Client.Delete(t.Context(), render.FencingPolicy()); err != nil {
		t.Fatal(err)
	}
	for _, c := range clusters {
		awaitPolicyMissing(t, c, user, deletedAgain)
	}
	rebind(t, user, rbac.ClusterRole().Name, true)
	for _, c := range clusters {
		awaitFencing(t, c, metav1.ConditionTrue, "AsExpected")
	}
	checkJudged(t, clusters[1], "cpo-1", "cpo-x")
	for _, c := range clusters {
		deleteCluster(t, c)
	}
}

// awaitPolicyMissing waits until c's LeaderFencing says FencingPolicyMissing;
// when it does not come, it says what the API server holds and what the
// operator (user) did since the policy was deleted, from the audit log.
func awaitPolicyMissing(t *testing.T, c *cluster, user string, deleted time.Time) {
	t.Helper()
	var got *metav1.Condition
	for end := time.Now().Add(converge); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		got = meta.FindStatusCondition(c.get(t).Status.Conditions, hostedcluster.LeaderFencing)
		if got != nil && got.Status == metav1.ConditionFalse && got.Reason == "FencingPolicyMissing" {
			return
		}
	}
	hc := c.get(t)
	explain := fmt.Sprintf("LeaderFencing %+v after %s, want False FencingPolicyMissing; status.verifiedFence %+v", got, converge, hc.Status.VerifiedFence)
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: render.FencingPolicyName}, policy); err != nil {
		explain += fmt.Sprintf("; the policy: %v", err)
	} else {
		explain += fmt.Sprintf("; the policy exists again: uid %s, created %s", policy.UID, policy.CreationTimestamp)
	}
	events, err := env.AuditEvents()
	if err != nil {
		t.Fatal(err)
	}
	explain += "\nthe operator's writes since the policy was deleted:"
	for _, w := range auditlog.Writes(events, auditlog.Query{Users: []string{user}}) {
		if !w.At.Before(deleted) {
			explain += "\n  " + w.String()
		}
	}
	t.Fatal(explain)
}

// rebind points user's ClusterRoleBinding at role, and waits until the
// API server's authorizer, which follows RBAC objects through its own
// informers, lets user write admission policies only if writesPolicies:
// until then the old binding may still be in force (the operator would
// re-create a policy the test deletes), or neither (every request of the
// operator refused).
func rebind(t *testing.T, user, role string, writesPolicies bool) {
	t.Helper()
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user}}
	if err := env.Client.Delete(t.Context(), binding); err != nil {
		t.Fatal(err)
	}
	binding = &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}
	if err := env.Client.Create(t.Context(), binding); err != nil {
		t.Fatal(err)
	}
	testenv.AwaitAccess(t, env.Client, user, converge,
		testenv.Access{ResourceAttributes: authorizationv1.ResourceAttributes{Resource: "serviceaccounts", Verb: "impersonate", Name: hyperv1.ControlPlaneOperatorName}, Allowed: true},
		testenv.Access{ResourceAttributes: authorizationv1.ResourceAttributes{Group: admissionregistrationv1.GroupName, Resource: "validatingadmissionpolicies", Verb: "create"}, Allowed: writesPolicies},
	)
}

// TestRecreatedClusterFencesItsNewHolder deletes and re-creates
// HostedClusters in every order, the last one included, and hands each
// re-created cluster's Lease to a new holder: the new holder writes, the old
// one is refused. On Kubernetes 1.37 this is the path where a stopped Lease
// param cache would fence the new holder out (see render.KeepAlivePolicy).
func TestRecreatedClusterFencesItsNewHolder(t *testing.T) {
	startOperator(t)
	t.Run("when the only HostedCluster is re-created under its name", func(t *testing.T) {
		c := createCluster(t, "recreate-a", "one")
		holdLease(t, c, "pod-x")
		checkJudged(t, c, "pod-x", "pod-y")
		deleteCluster(t, c)
		c = createCluster(t, "recreate-a", "one")
		holdLease(t, c, "pod-z")
		awaitFencing(t, c, metav1.ConditionTrue, "AsExpected")
		checkJudged(t, c, "pod-z", "pod-x")
		deleteCluster(t, c)
	})
	t.Run("when one of two is re-created, first or last", func(t *testing.T) {
		a, b := createCluster(t, "recreate-b", "one"), createCluster(t, "recreate-b", "two")
		holdLease(t, a, "a-1")
		holdLease(t, b, "b-1")
		checkJudged(t, a, "a-1", "a-0")
		checkJudged(t, b, "b-1", "b-0")
		deleteCluster(t, a)
		a = createCluster(t, "recreate-b", "one")
		holdLease(t, a, "a-2")
		checkJudged(t, a, "a-2", "a-1")
		deleteCluster(t, b)
		deleteCluster(t, a)
		b = createCluster(t, "recreate-b", "two")
		holdLease(t, b, "b-2")
		awaitFencing(t, b, metav1.ConditionTrue, "AsExpected")
		checkJudged(t, b, "b-2", "b-1")
		deleteCluster(t, b)
	})
}

// TestWedgedFenceIsReported is the negative control of the keep-alive: with
// the operator stopped, every policy that uses Lease params (the two fencing
// policies, whose shared bindings always exist, and the keep-alive) is
// deleted, so the API server stops its Lease param cache for good. The
// operator, started again, re-creates them; after the next handover its
// probe finds the fence judging against the old holder, reports it stale,
// looks again, and then reports the fence wedged, with what to do, in a
// condition and an event. It must
// run last: the API server stays broken.
func TestWedgedFenceIsReported(t *testing.T) {
	_, stop := startOperator(t)
	c := createCluster(t, "wedged", "one")
	holdLease(t, c, "old-holder")
	awaitFencing(t, c, metav1.ConditionTrue, "AsExpected")
	checkJudged(t, c, "old-holder", "someone")
	stop()

	for _, policy := range []client.Object{render.FencingPolicy(), render.ClusterAPIFencingPolicy(), render.KeepAlivePolicy()} {
		if err := env.Client.Delete(t.Context(), policy); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(3 * time.Second) // the API server recomputes its policies and stops the cache
	startOperator(t)
	holdLease(t, c, "new-holder")
	wedged := awaitFencing(t, c, metav1.ConditionFalse, "FenceWedged")
	for _, want := range []string{`"old-holder"`, `"new-holder"`, "restart the kube-apiserver"} {
		if !strings.Contains(wedged.Message, want) {
			t.Errorf("the message does not say %s: %s", want, wedged.Message)
		}
	}
	testutil.Eventually(t, converge, func() error {
		list := &eventsv1.EventList{}
		if err := env.Client.List(t.Context(), list, client.InNamespace(c.hc.Namespace)); err != nil {
			return err
		}
		reasons := map[string]bool{}
		for _, e := range list.Items {
			reasons[e.Reason] = reasons[e.Reason] || e.Regarding.Name == c.hc.Name
		}
		if !reasons["FenceStale"] || !reasons["FenceWedged"] {
			return fmt.Errorf("events %v, want FenceStale (first seen) and FenceWedged", reasons)
		}
		return nil
	})
	// The danger it reports: the old holder is admitted, the new one refused.
	if err := write(t, c, "new-holder"); err == nil || !strings.Contains(err.Error(), "(holder: old-holder)") {
		t.Fatalf("the new holder's write: %v (this API server's Lease param cache did not go stale: the control proves nothing)", err)
	}
}
