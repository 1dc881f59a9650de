package hostedcluster_test

import (
	"fmt"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/controllers/hostedcluster"
	"github.com/hypershift-le/hypershift/support/testutil"
	"github.com/hypershift-le/hypershift/test/testenv"
)

// TestANodePortAnotherClusterHoldsIsRefused: two HostedClusters ask for one
// node port. The second is refused before anything is created for it,
// naming the first, and goes ahead by itself once the first is deleted.
func TestANodePortAnotherClusterHoldsIsRefused(t *testing.T) {
	startOperator(t, func(r *hostedcluster.Reconciler) { r.TeardownTimeout = time.Second })
	ns := env.Namespace(t)
	onPort := func(hc *hyperv1.HostedCluster) { hc.Spec.Services = hyperv1.NodePortServices("127.0.0.1", 30621) }
	first := newClusterIn(t, ns, "np1", "4.17.0", onPort)
	awaitNamespace(t, first)
	second := newClusterIn(t, ns, "np2", "4.17.0", onPort)

	want := hyperv1.NodePortConflictMessage(30621, ns+"/np1")
	awaitBlocked(t, second, hyperv1.NodePortConflictReason, want)
	awaitEvent(t, second.hc, corev1.EventTypeWarning, hyperv1.NodePortConflictReason, want)
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: second.controlPlaneNamespace()}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused cluster's control-plane namespace: got %v, want it not created", err)
	}
	if c := meta.FindStatusCondition(first.get(t).Status.Conditions, hyperv1.ValidConfiguration); c != nil && c.Status == metav1.ConditionFalse {
		t.Errorf("the first cluster is refused too: %+v", c)
	}

	if err := env.Client.Delete(t.Context(), first.hc); err != nil {
		t.Fatal(err)
	}
	awaitNamespace(t, second)
	testutil.Eventually(t, converge, func() error {
		if c := meta.FindStatusCondition(second.get(t).Status.Conditions, hyperv1.ValidConfiguration); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("ValidConfiguration = %+v", c)
		}
		return nil
	})
}

// TestWhatTheAPIServerRefusesReachesTheHostedCluster: an object the HO
// renders, or one the control-plane-operator does, is refused; the
// HostedCluster says so in the API server's words, with one event, and
// clears once the refusal goes.
func TestWhatTheAPIServerRefusesReachesTheHostedCluster(t *testing.T) {
	t.Run("when a policy forbids the control-plane namespace", func(t *testing.T) {
		startOperator(t, nil)
		ns := env.Namespace(t)
		controlPlane := hyperv1.ControlPlaneNamespace(ns, "demo")
		policy := forbidNamespace(t, controlPlane)
		c := newClusterIn(t, ns, "demo", "4.17.0", nil)
		want := `Refused by the management cluster's API server: namespaces "` + controlPlane + `" is forbidden: ValidatingAdmissionPolicy '` + policy +
			`' with binding '` + policy + `' denied request: hosted control planes need an approval here`
		awaitBlocked(t, c, hyperv1.RefusedByAPIServerReason, want)
		awaitEvent(t, c.hc, corev1.EventTypeWarning, hyperv1.RefusedByAPIServerReason, want)

		if err := env.Client.Delete(t.Context(), &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: policy}}); err != nil {
			t.Fatal(err)
		}
		awaitNamespace(t, c)
		testutil.Eventually(t, converge, func() error { return checkCondition(c.get(t), hyperv1.ValidConfiguration, metav1.ConditionTrue) })
	})
	t.Run("when the control-plane-operator reports a refusal", func(t *testing.T) {
		startOperator(t, nil)
		c := newCluster(t, "4.17.0", nil)
		hcp := awaitControlPlane(t, c)
		want := `Refused by the management cluster's API server: Service "kube-apiserver" is invalid: spec.ports[0].nodePort: Invalid value: 80: provided port is not in the valid range. The range of valid ports is 30000-32767`
		reportValidConfiguration(t, hcp, metav1.ConditionFalse, hyperv1.RefusedByAPIServerReason, want)
		awaitBlocked(t, c, hyperv1.RefusedByAPIServerReason, want)
		awaitEvent(t, c.hc, corev1.EventTypeWarning, hyperv1.RefusedByAPIServerReason, want)
		// Once per change: passes that find the same report add none.
		for range 3 {
			c.update(t, func(hc *hyperv1.HostedCluster) {
				hc.Labels = map[string]string{"poked": fmt.Sprint(time.Now().UnixNano())}
			})
			time.Sleep(500 * time.Millisecond)
		}
		if n := env.CountEvents(t, c.hc, hyperv1.RefusedByAPIServerReason); n != 1 {
			t.Errorf("%d RefusedByAPIServer events, want 1", n)
		}

		reportValidConfiguration(t, hcp, metav1.ConditionTrue, "AsExpected", "Configuration is valid")
		testutil.Eventually(t, converge, func() error { return checkCondition(c.get(t), hyperv1.ValidConfiguration, metav1.ConditionTrue) })
	})
}

// awaitBlocked waits until ValidConfiguration and Available are False with
// reason and message, for the HostedCluster's generation.
func awaitBlocked(t *testing.T, c *cluster, reason, message string) {
	t.Helper()
	testutil.Eventually(t, converge, func() error {
		hc := c.get(t)
		for _, conditionType := range []string{hyperv1.ValidConfiguration, hyperv1.Available} {
			got := meta.FindStatusCondition(hc.Status.Conditions, conditionType)
			if got == nil || got.Status != metav1.ConditionFalse || got.Reason != reason || got.Message != message || got.ObservedGeneration != hc.Generation {
				return fmt.Errorf("%s = %+v, want False (%s) %q", conditionType, got, reason, message)
			}
		}
		return nil
	})
}

func awaitNamespace(t *testing.T, c *cluster) {
	t.Helper()
	testutil.Eventually(t, converge, func() error {
		return env.Client.Get(t.Context(), client.ObjectKey{Name: c.controlPlaneNamespace()}, &corev1.Namespace{})
	})
}

// reportValidConfiguration writes the HostedControlPlane's ValidConfiguration
// as its control-plane-operator would, for its current generation.
func reportValidConfiguration(t *testing.T, hcp *hyperv1.HostedControlPlane, status metav1.ConditionStatus, reason, message string) {
	t.Helper()
	testutil.Eventually(t, converge, func() error {
		live := &hyperv1.HostedControlPlane{}
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(hcp), live); err != nil {
			return err
		}
		meta.SetStatusCondition(&live.Status.Conditions, metav1.Condition{
			Type: hyperv1.ValidConfiguration, Status: status, Reason: reason, Message: message, ObservedGeneration: live.Generation,
		})
		available := metav1.Condition{Type: hyperv1.Available, Status: metav1.ConditionFalse, Reason: reason, Message: message, ObservedGeneration: live.Generation}
		if status == metav1.ConditionTrue {
			available.Reason, available.Message = "ComponentsUnavailable", "Waiting for etcd"
		}
		meta.SetStatusCondition(&live.Status.Conditions, available)
		return env.Client.Status().Update(t.Context(), live)
	})
}

// forbidNamespace makes an admission policy refuse creating namespace
// name, and returns the policy's (and its binding's) name.
func forbidNamespace(t *testing.T, name string) string {
	t.Helper()
	return env.Refuse(t, testenv.Refusal{Resource: "namespaces", Name: name, Message: "hosted control planes need an approval here"},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
}
