package hostedcluster_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/controllers/hostedcluster"
	"github.com/hypershift-le/hypershift/hypershift-operator/render"
	"github.com/hypershift-le/hypershift/support/testutil"
)

// repairTime bounds how long the HO may take to undo a change by someone else.
const repairTime = 10 * time.Second

// tamper is one change by another field manager to something the HO renders.
type tamper struct {
	name string
	// do changes the object; it may fail only where the API server is
	// expected to refuse (then refused names the expected message).
	do      func(t *testing.T, ns string) error
	refused string
	// repaired returns nil once the HO has undone the change.
	repaired func(t *testing.T, ns string) error
}

func mergePatch(t *testing.T, obj client.Object, patch string) error {
	return env.Client.Patch(t.Context(), obj, client.RawPatch(types.MergePatchType, []byte(patch)), client.FieldOwner("tamperer"))
}

func strategicPatch(t *testing.T, obj client.Object, patch string) error {
	return env.Client.Patch(t.Context(), obj, client.RawPatch(types.StrategicMergePatchType, []byte(patch)), client.FieldOwner("tamperer"))
}

func cpoDeployment(t *testing.T, ns string) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: hyperv1.ControlPlaneOperatorName}, d); err != nil {
		t.Fatal(err)
	}
	return d
}

// updateDeployment changes the CPO Deployment as another field manager,
// retrying when the Deployment controller wrote it in between.
func updateDeployment(t *testing.T, ns string, mutate func(*appsv1.Deployment)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d := cpoDeployment(t, ns)
		mutate(d)
		return env.Client.Update(t.Context(), d, client.FieldOwner("tamperer"))
	})
}

func inNamespace(ns, name string, obj client.Object) client.Object {
	obj.SetNamespace(ns)
	obj.SetName(name)
	return obj
}

func exists(t *testing.T, obj client.Object) error {
	return env.Client.Get(t.Context(), client.ObjectKeyFromObject(obj), obj)
}

var tampers = []tamper{
	{
		name: "changes the namespace's Pod Security label",
		do: func(t *testing.T, ns string) error {
			return mergePatch(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, `{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"privileged"}}}`)
		},
		repaired: func(t *testing.T, ns string) error {
			got := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
			if err := exists(t, got); err != nil {
				return err
			}
			if v := got.Labels["pod-security.kubernetes.io/enforce"]; v != "restricted" {
				return fmt.Errorf("enforce = %q", v)
			}
			return nil
		},
	},
	{
		name: "removes the namespace's control-plane label",
		do: func(t *testing.T, ns string) error {
			return mergePatch(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, `{"metadata":{"labels":{"`+hyperv1.HostedControlPlaneLabel+`":null}}}`)
		},
		repaired: func(t *testing.T, ns string) error {
			got := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
			if err := exists(t, got); err != nil {
				return err
			}
			if got.Labels[hyperv1.HostedControlPlaneLabel] != "true" {
				return errors.New("label missing")
			}
			return nil
		},
	},
	{
		name: "changes the pull-secret copy",
		do: func(t *testing.T, ns string) error {
			return mergePatch(t, inNamespace(ns, "pull-secret", &corev1.Secret{}), `{"data":{".dockerconfigjson":"e30="}}`)
		},
		repaired: func(t *testing.T, ns string) error {
			got := inNamespace(ns, "pull-secret", &corev1.Secret{}).(*corev1.Secret)
			if err := exists(t, got); err != nil {
				return err
			}
			if string(got.Data[corev1.DockerConfigJsonKey]) == "{}" {
				return errors.New("still tampered")
			}
			return nil
		},
	},
	{
		name: "deletes the ServiceAccount",
		do: func(t *testing.T, ns string) error {
			return env.Client.Delete(t.Context(), inNamespace(ns, hyperv1.ControlPlaneOperatorName, &corev1.ServiceAccount{}))
		},
		repaired: func(t *testing.T, ns string) error {
			return exists(t, inNamespace(ns, hyperv1.ControlPlaneOperatorName, &corev1.ServiceAccount{}))
		},
	},
	{
		name: "drops the Role's Lease rules",
		do: func(t *testing.T, ns string) error {
			return mergePatch(t, inNamespace(ns, hyperv1.ControlPlaneOperatorName, &rbacv1.Role{}), `{"rules":[{"apiGroups":[""],"resources":["services"],"verbs":["get"]}]}`)
		},
		repaired: func(t *testing.T, ns string) error {
			got := inNamespace(ns, hyperv1.ControlPlaneOperatorName, &rbacv1.Role{}).(*rbacv1.Role)
			if err := exists(t, got); err != nil {
				return err
			}
			for _, rule := range got.Rules {
				if slices.Contains(rule.Resources, "leases") {
					return nil
				}
			}
			return errors.New("no Lease rule")
		},
	},
	{
		name: "changes the RoleBinding's subjects",
		do: func(t *testing.T, ns string) error {
			return mergePatch(t, inNamespace(ns, hyperv1.ControlPlaneOperatorName, &rbacv1.RoleBinding{}), `{"subjects":[{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"mallory"}]}`)
		},
		repaired: func(t *testing.T, ns string) error {
			got := inNamespace(ns, hyperv1.ControlPlaneOperatorName, &rbacv1.RoleBinding{}).(*rbacv1.RoleBinding)
			if err := exists(t, got); err != nil {
				return err
			}
			if len(got.Subjects) != 1 || got.Subjects[0].Name != hyperv1.ControlPlaneOperatorName {
				return fmt.Errorf("subjects %v", got.Subjects)
			}
			return nil
		},
	},
	{
		name: "deletes the control-plane-operator's auth-delegator ClusterRoleBinding",
		do: func(t *testing.T, ns string) error {
			return env.Client.Delete(t.Context(), &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: render.AuthDelegatorBindingName(ns)}})
		},
		repaired: func(t *testing.T, ns string) error {
			return exists(t, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: render.AuthDelegatorBindingName(ns)}})
		},
	},
	{
		name: "switches the Deployment to RollingUpdate",
		do: func(t *testing.T, ns string) error {
			return strategicPatch(t, inNamespace(ns, hyperv1.ControlPlaneOperatorName, &appsv1.Deployment{}), `{"spec":{"strategy":{"type":"RollingUpdate"}}}`)
		},
		repaired: func(t *testing.T, ns string) error {
			if s := cpoDeployment(t, ns).Spec.Strategy; s.Type != appsv1.RecreateDeploymentStrategyType || s.RollingUpdate != nil {
				return fmt.Errorf("strategy %+v", s)
			}
			return nil
		},
	},
	{
		name: "drops --leader-elect=true from the Deployment",
		do: func(t *testing.T, ns string) error {
			return updateDeployment(t, ns, func(d *appsv1.Deployment) {
				args := slices.DeleteFunc(slices.Clone(d.Spec.Template.Spec.Containers[0].Args), func(a string) bool { return a == "--leader-elect=true" })
				d.Spec.Template.Spec.Containers[0].Args = args
			})
		},
		repaired: func(t *testing.T, ns string) error {
			if !slices.Contains(cpoDeployment(t, ns).Spec.Template.Spec.Containers[0].Args, "--leader-elect=true") {
				return errors.New("--leader-elect=true missing")
			}
			return nil
		},
	},
	{
		name: "changes the Deployment's release, image and security context",
		do: func(t *testing.T, ns string) error {
			return updateDeployment(t, ns, func(d *appsv1.Deployment) {
				c := &d.Spec.Template.Spec.Containers[0]
				c.Image = "registry.example/evil:1"
				for i := range c.Env {
					if c.Env[i].Name == hyperv1.OperateOnReleaseImageEnv {
						c.Env[i].Value = "registry.example/release:old"
					}
				}
				c.SecurityContext.AllowPrivilegeEscalation = ptr.To(true)
			})
		},
		repaired: func(t *testing.T, ns string) error {
			c := cpoDeployment(t, ns).Spec.Template.Spec.Containers[0]
			if strings.Contains(c.Image, "evil") || *c.SecurityContext.AllowPrivilegeEscalation {
				return fmt.Errorf("image %s, allowPrivilegeEscalation %v", c.Image, *c.SecurityContext.AllowPrivilegeEscalation)
			}
			for _, e := range c.Env {
				if e.Name == hyperv1.OperateOnReleaseImageEnv && strings.HasSuffix(e.Value, ":old") {
					return errors.New("release env still tampered")
				}
			}
			return nil
		},
	},
	{
		name: "adds a container to the Deployment",
		do: func(t *testing.T, ns string) error {
			return strategicPatch(t, inNamespace(ns, hyperv1.ControlPlaneOperatorName, &appsv1.Deployment{}),
				`{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","image":"registry.example/sidecar:1"}]}}}}`)
		},
		repaired: func(t *testing.T, ns string) error {
			if c := cpoDeployment(t, ns).Spec.Template.Spec.Containers; len(c) != 1 {
				return fmt.Errorf("%d containers", len(c))
			}
			return nil
		},
	},
	{
		name: "changes the fencing binding's param",
		do: func(t *testing.T, _ string) error {
			return mergePatch(t, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: render.FencingBindingName}},
				`{"spec":{"paramRef":{"name":"somebody-else"}}}`)
		},
		repaired: func(t *testing.T, _ string) error {
			got := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: render.FencingBindingName}}
			if err := exists(t, got); err != nil {
				return err
			}
			if got.Spec.ParamRef.Name != hyperv1.ControlPlaneOperatorLeaseName {
				return fmt.Errorf("paramRef %+v", got.Spec.ParamRef)
			}
			return nil
		},
	},
	{
		name: "removes the namespace's fencing label",
		do: func(t *testing.T, ns string) error {
			return mergePatch(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
				`{"metadata":{"labels":{"`+render.LeaderFencingLabel+`":null}}}`)
		},
		repaired: func(t *testing.T, ns string) error {
			got := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
			if err := exists(t, got); err != nil {
				return err
			}
			if got.Labels[render.LeaderFencingLabel] != "true" {
				return fmt.Errorf("labels %v", got.Labels)
			}
			return nil
		},
	},
	{
		name: "deletes the fencing policy",
		do: func(t *testing.T, _ string) error {
			return env.Client.Delete(t.Context(), render.FencingPolicy())
		},
		repaired: func(t *testing.T, _ string) error { return exists(t, render.FencingPolicy()) },
	},
	{
		name: "deletes the Lease guard",
		do: func(t *testing.T, _ string) error {
			return errors.Join(env.Client.Delete(t.Context(), render.LeaseGuardBinding()), env.Client.Delete(t.Context(), render.LeaseGuardPolicy()))
		},
		repaired: func(t *testing.T, _ string) error {
			return errors.Join(exists(t, render.LeaseGuardPolicy()), exists(t, render.LeaseGuardBinding()))
		},
	},
	{
		name: "deletes the Lease (refused)",
		do: func(t *testing.T, ns string) error {
			return env.Client.Delete(t.Context(), inNamespace(ns, hyperv1.ControlPlaneOperatorLeaseName, &coordinationv1.Lease{}))
		},
		refused: "deleted only with its control-plane namespace",
		repaired: func(t *testing.T, ns string) error {
			return exists(t, inNamespace(ns, hyperv1.ControlPlaneOperatorLeaseName, &coordinationv1.Lease{}))
		},
	},
}

// TestTamperedObjectsAreRepaired changes, as another field manager, each
// object the HO renders for a HostedCluster and the cluster-wide fencing
// objects, and expects each back within repairTime; once repaired, the HO
// writes nothing more.
func TestTamperedObjectsAreRepaired(t *testing.T) {
	user := startOperator(t, func(r *hostedcluster.Reconciler) { r.Fencing = hostedcluster.Fencing{Enabled: true} })
	c := newCluster(t, "4.17.0", nil)
	ns := c.controlPlaneNamespace()
	awaitFenced(t, c)
	for _, tt := range tampers {
		t.Run("when someone "+tt.name+", it comes back", func(t *testing.T) {
			if tt.refused != "" {
				// An admission policy re-created by an earlier case is in
				// force only once the API server has loaded it: wait until a
				// dry run of the change is refused, then make it for real.
				testutil.Eventually(t, repairTime, func() error {
					lease := inNamespace(ns, hyperv1.ControlPlaneOperatorLeaseName, &coordinationv1.Lease{})
					if err := env.Client.Delete(t.Context(), lease, client.DryRunAll); err == nil || !strings.Contains(err.Error(), tt.refused) {
						return fmt.Errorf("a dry run went through (%w)", err)
					}
					return nil
				})
			}
			err := tt.do(t, ns)
			switch {
			case tt.refused != "" && (err == nil || !strings.Contains(err.Error(), tt.refused)):
				t.Fatalf("the change went through (%v), want it refused with %q", err, tt.refused)
			case tt.refused == "" && err != nil:
				t.Fatal(err)
			}
			start := time.Now()
			testutil.Eventually(t, repairTime, func() error { return tt.repaired(t, ns) })
			t.Logf("repaired after %s", time.Since(start).Round(time.Millisecond))
		})
	}
	awaitFenced(t, c)
	time.Sleep(time.Second)
	quiet := time.Now()
	time.Sleep(3 * time.Second)
	if writes := writesBy(t, user, quiet); len(writes) > 0 {
		t.Fatalf("once repaired, the operator still wrote:%s", describe(writes))
	}
}

// awaitFenced waits until the cluster's control plane is applied and fenced.
func awaitFenced(t *testing.T, c *cluster) {
	t.Helper()
	testutil.Eventually(t, converge, func() error {
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: c.controlPlaneNamespace(), Name: hyperv1.ControlPlaneOperatorName}, &appsv1.Deployment{}); err != nil {
			return err
		}
		return checkCondition(c.get(t), hostedcluster.LeaderFencing, metav1.ConditionTrue)
	})
}

// TestStrategySwitchedThenUpgraded switches the CPO Deployment to
// RollingUpdate by hand and then requests an upgrade: the strategy comes
// back, the upgrade completes, and status never says the new release is
// rolled out before its CPO runs it and reports it ready.
func TestStrategySwitchedThenUpgraded(t *testing.T) {
	startOperator(t, nil)
	c := newCluster(t, "4.17.0", nil)
	reportReady(t, c, "4.17.0")
	testutil.Eventually(t, converge, func() error { return checkCondition(c.get(t), hyperv1.Progressing, metav1.ConditionFalse) })
	ns := c.controlPlaneNamespace()

	if err := strategicPatch(t, inNamespace(ns, hyperv1.ControlPlaneOperatorName, &appsv1.Deployment{}), `{"spec":{"strategy":{"type":"RollingUpdate"}}}`); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, repairTime, func() error {
		if s := cpoDeployment(t, ns).Spec.Strategy; s.Type != appsv1.RecreateDeploymentStrategyType || s.RollingUpdate != nil {
			return fmt.Errorf("strategy %+v", s)
		}
		return nil
	})

	lies := watchForEarlyRollout(t, c, "4.17.1")
	next := c.pushRelease(t, "4.17.1")
	c.update(t, func(hc *hyperv1.HostedCluster) { hc.Spec.Release.Image = next })
	testutil.Eventually(t, converge, func() error {
		return checkDeployment(cpoDeployment(t, ns), c.cpoImage("4.17.1"), c.pin(t, next), 1)
	})
	time.Sleep(time.Second) // the rolled-out Deployment alone must not complete the rollout
	reportReady(t, c, "4.17.1")
	testutil.Eventually(t, converge, func() error {
		hc := c.get(t)
		if h := hc.Status.Version.History; h[0].Version != "4.17.1" || h[0].State != configv1.CompletedUpdate {
			return fmt.Errorf("history %+v", h[0])
		}
		return checkCondition(hc, hyperv1.Progressing, metav1.ConditionFalse)
	})
	if early := lies(); len(early) > 0 {
		t.Fatalf("status said release 4.17.1 was rolled out before its control-plane-operator reported it:\n%s", strings.Join(early, "\n"))
	}
}

// watchForEarlyRollout polls the HostedCluster until the returned function
// is called, and reports every status seen that calls version rolled out
// while its HostedControlPlane does not report it ready.
func watchForEarlyRollout(t *testing.T, c *cluster, version string) func() []string {
	t.Helper()
	var (
		mu    sync.Mutex
		early []string
		done  = make(chan struct{})
		ended = make(chan struct{})
	)
	go func() {
		defer close(ended)
		for {
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
			hc := &hyperv1.HostedCluster{}
			hcp := &hyperv1.HostedControlPlane{}
			if env.Client.Get(t.Context(), client.ObjectKeyFromObject(c.hc), hc) != nil || hc.Status.Version == nil ||
				env.Client.Get(t.Context(), client.ObjectKey{Namespace: c.controlPlaneNamespace(), Name: c.hc.Name}, hcp) != nil {
				continue
			}
			top := hc.Status.Version.History[0]
			progressing := meta.FindStatusCondition(hc.Status.Conditions, hyperv1.Progressing)
			claimsDone := (top.Version == version && top.State == configv1.CompletedUpdate) ||
				(hc.Status.Version.Desired.Version == version && progressing != nil && progressing.Status == metav1.ConditionFalse)
			if claimsDone && hcp.Status.Version != version {
				mu.Lock()
				early = append(early, fmt.Sprintf("history %+v, Progressing %+v, HostedControlPlane reports %q", top, progressing, hcp.Status.Version))
				mu.Unlock()
			}
		}
	}()
	return func() []string {
		close(done)
		<-ended
		mu.Lock()
		defer mu.Unlock()
		return early
	}
}

// TestBlockedRolloutIsReported makes the CPO Deployment impossible to
// update and requests an upgrade: status says the release is not rolled
// out, and why, naming the object.
func TestBlockedRolloutIsReported(t *testing.T) {
	user := startOperator(t, nil)
	c := newCluster(t, "4.17.0", nil)
	reportReady(t, c, "4.17.0")
	testutil.Eventually(t, converge, func() error { return checkCondition(c.get(t), hyperv1.Progressing, metav1.ConditionFalse) })
	ns := c.controlPlaneNamespace()
	blockUpdatesBy(t, user, ns)

	next := c.pushRelease(t, "4.17.1")
	c.update(t, func(hc *hyperv1.HostedCluster) { hc.Spec.Release.Image = next })
	testutil.Eventually(t, converge, func() error {
		hc := c.get(t)
		if err := checkCondition(hc, hyperv1.Progressing, metav1.ConditionTrue); err != nil {
			return err
		}
		p := meta.FindStatusCondition(hc.Status.Conditions, hyperv1.Progressing)
		if p.Reason != "RolloutBlocked" || !strings.Contains(p.Message, "Deployment "+ns+"/"+hyperv1.ControlPlaneOperatorName) {
			return fmt.Errorf("Progressing %s: %s", p.Reason, p.Message)
		}
		if h := hc.Status.Version.History; h[0].Version != "4.17.1" || h[0].State != configv1.PartialUpdate {
			return fmt.Errorf("history %+v", h[0])
		}
		return checkCondition(hc, hyperv1.ReconciliationSucceeded, metav1.ConditionFalse)
	})
}

// blockUpdatesBy installs a policy refusing user's updates of Deployments in ns.
func blockUpdatesBy(t *testing.T, user, ns string) {
	t.Helper()
	name := "block-" + ns
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "request.userInfo.username != '" + user + "'", Message: "updates are blocked by the test"}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
			},
		},
	}
	for _, obj := range []client.Object{policy, binding} {
		if err := env.Client.Create(t.Context(), obj); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), obj) })
	}
	// Wait until it is enforced: a dry-run patch (an update to admission,
	// and what the operator's ClusterRole allows) as the user is refused.
	cfg, err := env.AddUser(user)
	if err != nil {
		t.Fatal(err)
	}
	as, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, converge, func() error {
		d := cpoDeployment(t, ns)
		patch := client.MergeFrom(d.DeepCopy())
		d.Labels = map[string]string{"probe": "true"}
		if err := as.Patch(t.Context(), d, patch, client.DryRunAll); err == nil || !strings.Contains(err.Error(), "blocked by the test") {
			return fmt.Errorf("not enforced yet (%w)", err)
		}
		return nil
	})
}

// TestDeletedNamespaceIsRebuilt deletes a control-plane namespace by hand
// while its (stand-in) CPO holds the HostedControlPlane with a finalizer:
// the namespace goes, the HostedCluster says so meanwhile, and the control
// plane is built again; only then is it reported rebuilt.
func TestDeletedNamespaceIsRebuilt(t *testing.T) {
	startOperator(t, func(r *hostedcluster.Reconciler) { r.Fencing = hostedcluster.Fencing{Enabled: true} })
	c := newCluster(t, "4.17.0", nil)
	hcp := awaitControlPlane(t, c)
	patch := client.MergeFrom(hcp.DeepCopy())
	hcp.Finalizers = append(hcp.Finalizers, "hypershift.openshift.io/control-plane-operator")
	if err := env.Client.Patch(t.Context(), hcp, patch); err != nil {
		t.Fatal(err)
	}
	reportReady(t, c, "4.17.0")
	awaitFenced(t, c)
	testutil.Eventually(t, converge, func() error { return checkCondition(c.get(t), hyperv1.Available, metav1.ConditionTrue) })
	// A new control plane is built, not rebuilt.
	if findEvent(t, c, "ControlPlaneRebuilding") == nil {
		t.Fatal("a new HostedCluster's control plane was reported as rebuilt (event ControlPlaneRebuilding)")
	}
	old := &corev1.Namespace{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: c.controlPlaneNamespace()}, old); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	if err := env.Client.Delete(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	sawDeleting := false
	testutil.Eventually(t, 60*time.Second, func() error {
		if c := meta.FindStatusCondition(c.get(t).Status.Conditions, hyperv1.Available); c != nil && c.Reason == "ControlPlaneNamespaceDeleting" && c.Status == metav1.ConditionFalse {
			sawDeleting = true
		}
		ns := &corev1.Namespace{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Name: c.controlPlaneNamespace()}, ns); err != nil {
			return err
		}
		if ns.UID == old.UID {
			return errors.New("the old namespace is still there")
		}
		return nil
	})
	t.Logf("the namespace was deleted and created again in %s", time.Since(start).Round(time.Millisecond))
	if !sawDeleting {
		t.Error("Available never said the namespace was being deleted")
	}
	awaitFenced(t, c)
	reportReady(t, c, "4.17.0")
	testutil.Eventually(t, converge, func() error { return checkCondition(c.get(t), hyperv1.Available, metav1.ConditionTrue) })
	for _, reason := range []string{"ControlPlaneNamespaceDeleting", "ControlPlaneRebuilding"} {
		testutil.Eventually(t, converge, func() error { return findEvent(t, c, reason) })
	}
}

// TestTeardownWithNamespaceGone deletes the control-plane namespace and the
// HostedCluster together: the teardown completes.
func TestTeardownWithNamespaceGone(t *testing.T) {
	startOperator(t, func(r *hostedcluster.Reconciler) { r.Fencing = hostedcluster.Fencing{Enabled: true} })
	c := newCluster(t, "4.17.0", nil)
	awaitFenced(t, c)
	if err := env.Client.Delete(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.controlPlaneNamespace()}}); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(t.Context(), c.get(t)); err != nil {
		t.Fatal(err)
	}
	awaitGone(t, c)
}

func findEvent(t *testing.T, c *cluster, reason string) error {
	t.Helper()
	list := &eventsv1.EventList{}
	if err := env.Client.List(t.Context(), list, client.InNamespace(c.hc.Namespace)); err != nil {
		return err
	}
	for _, e := range list.Items {
		if e.Regarding.Name == c.hc.Name && e.Reason == reason {
			return nil
		}
	}
	return fmt.Errorf("no %s event", reason)
}
