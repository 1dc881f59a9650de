package hostedcluster_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/controllers/hostedcluster"
	"github.com/hypershift-le/hypershift/hypershift-operator/render"
	"github.com/hypershift-le/hypershift/support/testutil"
)

// TestFencingLifecycle checks the HO fences a new control-plane namespace
// (the shared binding, with the CPO Lease as its param, selects it by its
// label), says so, and, the fence seen to hold, deletes the binding of the
// namespace alone that an earlier version applied; the fence holds without
// it, and the namespace is torn down with the cluster.
func TestFencingLifecycle(t *testing.T) {
	probe := newRecordingProbe()
	startOperator(t, func(r *hostedcluster.Reconciler) {
		r.Fencing = hostedcluster.Fencing{Enabled: true}
		probe.wrap(r)
	})
	// What an earlier version bound to this namespace alone.
	legacy, in := legacyBinding(t)
	ns := hyperv1.ControlPlaneNamespace(in, "demo")
	c := newClusterIn(t, in, "demo", "4.17.0", nil)
	testutil.Eventually(t, converge, func() error {
		if err := env.Client.Get(t.Context(), client.ObjectKey{Name: render.FencingPolicyName}, &admissionregistrationv1.ValidatingAdmissionPolicy{}); err != nil {
			return err
		}
		binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Name: render.FencingBindingName}, binding); err != nil {
			return err
		}
		if binding.Spec.ParamRef == nil || binding.Spec.ParamRef.Name != "control-plane-operator-leader-elect" {
			return fmt.Errorf("paramRef %+v", binding.Spec.ParamRef)
		}
		namespace := &corev1.Namespace{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Name: ns}, namespace); err != nil {
			return err
		}
		if namespace.Labels[render.LeaderFencingLabel] != "true" {
			return fmt.Errorf("namespace %s is not labelled %s: %v", ns, render.LeaderFencingLabel, namespace.Labels)
		}
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(legacy), &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the binding of %s alone is still there (%w)", ns, err)
		}
		// Verified before the binding of the namespace alone went, and
		// again after, when only the shared binding can have refused the
		// probe. Waited for, not checked once: the pass that deletes the
		// binding writes its status (LeaderFencing Unknown until the next
		// probe) only when it ends, so for a moment the binding is gone
		// and the condition still says what the first probe found.
		if n := probe.count(); n < 2 {
			return fmt.Errorf("the fence was probed %d times, want once with the binding of the namespace alone and once without", n)
		}
		return checkCondition(c.get(t), hostedcluster.LeaderFencing, metav1.ConditionTrue)
	})

	if err := env.Client.Delete(t.Context(), c.get(t)); err != nil {
		t.Fatal(err)
	}
	awaitGone(t, c)
}

// TestClusterAPIFencingLifecycle checks that, for a cluster of platform
// Pod, the HO creates the cluster-api manager's Lease, the param of the
// shared cluster-api fencing binding, before the manager's Deployment
// exists, in a namespace that binding selects.
func TestClusterAPIFencingLifecycle(t *testing.T) {
	startOperator(t, func(r *hostedcluster.Reconciler) { r.Fencing = hostedcluster.Fencing{Enabled: true} })
	c := newCluster(t, "4.17.0", func(hc *hyperv1.HostedCluster) {
		hc.Spec.Platform.Type = hyperv1.PodPlatform
		hc.Annotations = map[string]string{hyperv1.ClusterAPIManagerImageAnnotation: "registry.example/cluster-api:v1.13.6"}
	})
	ns := c.controlPlaneNamespace()
	testutil.Eventually(t, converge, func() error {
		return env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: hyperv1.ClusterAPIName}, &appsv1.Deployment{})
	})
	// The Deployment exists: its fence must have been in place first.
	lease := &coordinationv1.Lease{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: hyperv1.ClusterAPILeaseName}, lease); err != nil {
		t.Fatalf("the cluster-api manager's Deployment exists without its Lease: %v", err)
	}
	if lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "" {
		t.Fatalf("the Lease was created with holder %q; want none", *lease.Spec.HolderIdentity)
	}
	namespace := &corev1.Namespace{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: ns}, namespace); err != nil {
		t.Fatal(err)
	}
	if namespace.Labels[render.LeaderFencingLabel] != "true" {
		t.Fatalf("the cluster-api manager's Deployment exists in a namespace no fencing binding selects: labels %v", namespace.Labels)
	}
	testutil.Eventually(t, converge, func() error {
		if err := env.Client.Get(t.Context(), client.ObjectKey{Name: render.ClusterAPIFencingPolicyName}, &admissionregistrationv1.ValidatingAdmissionPolicy{}); err != nil {
			return err
		}
		binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Name: render.ClusterAPIFencingBindingName}, binding); err != nil {
			return err
		}
		if binding.Spec.PolicyName != render.ClusterAPIFencingPolicyName || binding.Spec.ParamRef == nil || binding.Spec.ParamRef.Name != hyperv1.ClusterAPILeaseName {
			return fmt.Errorf("binding %+v", binding.Spec)
		}
		return nil
	})

	if err := env.Client.Delete(t.Context(), c.get(t)); err != nil {
		t.Fatal(err)
	}
	awaitGone(t, c)
}

// TestFencingDisabled checks that an operator started with fencing off
// takes a namespace an operator with fencing fenced out of the fencing
// bindings' selection (its label, set when the namespace was created,
// goes), deletes a binding of the namespace alone an earlier version left,
// and says so in the condition.
func TestFencingDisabled(t *testing.T) {
	_, stopFencing := startStoppableOperator(t, func(r *hostedcluster.Reconciler) { r.Fencing = hostedcluster.Fencing{Enabled: true} })
	_, in := legacyBinding(t)
	ns := hyperv1.ControlPlaneNamespace(in, "demo")
	c := newClusterIn(t, in, "demo", "4.17.0", nil)
	testutil.Eventually(t, converge, func() error {
		return checkCondition(c.get(t), hostedcluster.LeaderFencing, metav1.ConditionTrue)
	})
	stopFencing()
	// What the operator with fencing did, and what an earlier version left.
	namespace := &corev1.Namespace{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: ns}, namespace); err != nil {
		t.Fatal(err)
	}
	if namespace.Labels[render.LeaderFencingLabel] != "true" {
		t.Fatalf("namespace %s was fenced without label %s: %v", ns, render.LeaderFencingLabel, namespace.Labels)
	}
	legacy := render.NamespaceFencingBinding(ns, clusterKey(c))
	if err := env.Client.Create(t.Context(), legacy); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}

	startOperator(t, nil)
	testutil.Eventually(t, converge, func() error {
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(legacy), &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("a binding of %s exists though fencing is off (%w)", ns, err)
		}
		namespace := &corev1.Namespace{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Name: ns}, namespace); err != nil {
			return err
		}
		if _, ok := namespace.Labels[render.LeaderFencingLabel]; ok {
			return fmt.Errorf("namespace %s is labelled %s though fencing is off", ns, render.LeaderFencingLabel)
		}
		return checkCondition(c.get(t), hostedcluster.LeaderFencing, metav1.ConditionFalse)
	})
}

// legacyBinding creates, in a new namespace, what a version before the
// shared fencing binding bound for a HostedCluster "demo" there: the fencing
// policy bound to its control-plane namespace alone. It returns the binding
// and the namespace.
func legacyBinding(t *testing.T) (*admissionregistrationv1.ValidatingAdmissionPolicyBinding, string) {
	t.Helper()
	in := env.Namespace(t)
	hc := &hyperv1.HostedCluster{ObjectMeta: metav1.ObjectMeta{Namespace: in, Name: "demo"}}
	binding := render.NamespaceFencingBinding(hyperv1.ControlPlaneNamespace(in, "demo"), render.ClusterKey(hc))
	if err := env.Client.Create(t.Context(), binding); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), binding) })
	return binding, in
}

// recordingProbe is the operator's probe, recording when it probed each
// namespace. It is passed by value, its state shared.
type recordingProbe struct {
	hostedcluster.FenceProbe
	mu    *sync.Mutex
	calls map[string][]time.Time
}

func newRecordingProbe() recordingProbe {
	return recordingProbe{mu: &sync.Mutex{}, calls: map[string][]time.Time{}}
}

func (p recordingProbe) Judge(ctx context.Context, namespace, pod string) (hostedcluster.FenceJudgement, error) {
	p.mu.Lock()
	p.calls[namespace] = append(p.calls[namespace], time.Now())
	p.mu.Unlock()
	return p.FenceProbe.Judge(ctx, namespace, pod)
}

// wrap makes r probe through p.
func (p *recordingProbe) wrap(r *hostedcluster.Reconciler) {
	p.FenceProbe = r.Probe
	r.Probe = *p
}

// count is how many probes were made since the last reset.
func (p recordingProbe) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, calls := range p.calls {
		n += len(calls)
	}
	return n
}

func (p recordingProbe) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.calls)
}

// first is when namespace was first probed.
func (p recordingProbe) first(namespace string) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if calls := p.calls[namespace]; len(calls) > 0 {
		return calls[0], true
	}
	return time.Time{}, false
}

// TestNoWritesAfterAnOperatorRestart checks that an operator that starts
// where another one verified the fence (a restart, or a standby taking
// over) trusts the verdict status keeps for the same policy, binding and
// holder: its passes over a converged HostedCluster probe nothing and
// write nothing. A new holder is probed again.
func TestNoWritesAfterAnOperatorRestart(t *testing.T) {
	probe := newRecordingProbe()
	fencing := func(r *hostedcluster.Reconciler) {
		r.Fencing = hostedcluster.Fencing{Enabled: true}
		probe.wrap(r)
	}
	_, stopFirst := startStoppableOperator(t, fencing)
	c := newCluster(t, "4.17.0", nil)
	awaitControlPlane(t, c)
	renewAs(t, c, "cpo-x", 15)
	reportReady(t, c, "4.17.0")
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	testutil.Eventually(t, converge, func() error {
		hc := c.get(t)
		for _, condition := range []string{hyperv1.Available, hostedcluster.LeaderFencing} {
			if err := checkCondition(hc, condition, metav1.ConditionTrue); err != nil {
				return err
			}
		}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Name: render.FencingBindingName}, binding); err != nil {
			return err
		}
		if v := hc.Status.VerifiedFence; v == nil || v.HolderIdentity != "cpo-x" || v.BindingUID != string(binding.UID) || v.BindingGeneration != binding.Generation {
			return fmt.Errorf("status.verifiedFence = %+v, want holder cpo-x and binding %s at generation %d", v, binding.UID, binding.Generation)
		}
		return nil
	})
	time.Sleep(2 * time.Second) // converge: caches catch up with the last writes

	stopFirst()
	probe.reset()
	since, before := time.Now(), passes(t)
	ho := startOperator(t, fencing)
	for i := range 3 {
		c.touch(t, i)
		time.Sleep(time.Second)
	}
	time.Sleep(2 * time.Second)
	if n := passes(t) - before; n < 3 {
		t.Fatalf("%v passes of the new operator, want one per touch at least (3): the check proves nothing", n)
	}
	if n := probe.count(); n != 0 {
		t.Errorf("the new operator probed a fence already verified for the same objects and holder %d times", n)
	}
	if writes := writesBy(t, ho, since, c.hc.Namespace, c.controlPlaneNamespace()); len(writes) != 0 {
		t.Fatalf("the new operator wrote %d times to a converged HostedCluster:%s", len(writes), describe(writes))
	}

	// A new holder is a new verdict.
	renewAs(t, c, "cpo-y", 15)
	testutil.Eventually(t, converge, func() error {
		hc := c.get(t)
		if v := hc.Status.VerifiedFence; v == nil || v.HolderIdentity != "cpo-y" {
			return fmt.Errorf("status.verifiedFence = %+v, want holder cpo-y", v)
		}
		return checkCondition(hc, hostedcluster.LeaderFencing, metav1.ConditionTrue)
	})
	if probe.count() == 0 {
		t.Fatal("the fence was verified for a new holder without a probe")
	}
}

// TestFirstProbeWaitsForANewBinding checks that the fence of a new
// HostedCluster is first probed a moment after its namespace, labelled for
// the fencing binding, is written, not in the same pass: the API server has
// not put the binding in force there that early, so that probe would be a
// request wasted, and LeaderFencing would wait for the recheck 2 s later.
func TestFirstProbeWaitsForANewBinding(t *testing.T) {
	probe := newRecordingProbe()
	ho := startOperator(t, func(r *hostedcluster.Reconciler) {
		r.Fencing = hostedcluster.Fencing{Enabled: true}
		probe.wrap(r)
	})
	c := newCluster(t, "4.17.0", nil)
	awaitControlPlane(t, c)
	testutil.Eventually(t, converge, func() error {
		return checkCondition(c.get(t), hostedcluster.LeaderFencing, metav1.ConditionTrue)
	})
	namespace := c.controlPlaneNamespace()
	probed, ok := probe.first(namespace)
	if !ok {
		t.Fatal("LeaderFencing is True and the fence was never probed")
	}
	var written time.Time
	for _, w := range writesBy(t, ho, time.Time{}) {
		if w.ObjectRef.Resource == "namespaces" && w.ObjectRef.Name == namespace {
			written = w.RequestReceivedTimestamp.Time
			break
		}
	}
	if written.IsZero() {
		t.Fatalf("the audit log has no write of namespace %s by %s", namespace, ho)
	}
	// The operator waits a second; the audit log's and this process's
	// clocks are the same machine's.
	if after := probed.Sub(written); after < 900*time.Millisecond {
		t.Errorf("the fence was first probed %s after the namespace was written, want about a second after", after.Round(time.Millisecond))
	}
}
