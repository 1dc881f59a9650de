package hostedcluster_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/controllers/hostedcluster"
	"github.com/hypershift-le/hypershift/support/testutil"
)

// renewAs renews the CPO Lease as holder every second until stop is
// called, with a lease duration of leaseSeconds, as a leading CPO would.
func renewAs(t *testing.T, c *cluster, holder string, leaseSeconds int32) (stop func()) {
	t.Helper()
	return renewWithSkew(t, c, holder, leaseSeconds, 0)
}

// renewWithSkew is renewAs by a CPO whose clock is off by skew: it writes
// renewTime as now plus skew. It creates the Lease when it is missing, as
// the CPO does where the HO does not fence.
func renewWithSkew(t *testing.T, c *cluster, holder string, leaseSeconds int32, skew time.Duration) (stop func()) {
	t.Helper()
	var stopped atomic.Bool
	done := make(chan struct{})
	renew := func() error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			lease := &coordinationv1.Lease{}
			err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: c.controlPlaneNamespace(), Name: hyperv1.ControlPlaneOperatorLeaseName}, lease)
			if err != nil && !apierrors.IsNotFound(err) {
				return err
			}
			lease.Spec.HolderIdentity = ptr.To(holder)
			lease.Spec.LeaseDurationSeconds = ptr.To(leaseSeconds)
			lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now().Add(skew)}
			if apierrors.IsNotFound(err) {
				lease.Namespace, lease.Name = c.controlPlaneNamespace(), hyperv1.ControlPlaneOperatorLeaseName
				return env.Client.Create(t.Context(), lease)
			}
			return env.Client.Update(t.Context(), lease)
		})
	}
	testutil.Eventually(t, converge, renew)
	go func() {
		defer close(done)
		for !stopped.Load() {
			time.Sleep(time.Second)
			if !stopped.Load() {
				_ = renew()
			}
		}
	}()
	var once atomic.Bool
	stop = func() {
		if once.CompareAndSwap(false, true) {
			stopped.Store(true)
			<-done
		}
	}
	t.Cleanup(stop)
	return stop
}

// TestSilentLeaseMakesAvailableUnknown checks that status goes stale
// honestly: while the CPO renews its Lease, Available follows the
// HostedControlPlane; once no renewal comes for the lease duration, it is
// Unknown, naming the silent control-plane-operator; renewals bring it back.
func TestSilentLeaseMakesAvailableUnknown(t *testing.T) {
	startOperator(t, func(r *hostedcluster.Reconciler) { r.Fencing = hostedcluster.Fencing{Enabled: true} })
	c := newCluster(t, "4.17.0", nil)
	awaitControlPlane(t, c)
	const leaseSeconds = 3
	stop := renewAs(t, c, "cpo-x", leaseSeconds)
	reportReady(t, c, "4.17.0")
	testutil.Eventually(t, converge, func() error { return checkCondition(c.get(t), hyperv1.Available, metav1.ConditionTrue) })

	// Renewals keep it Available for longer than the lease duration.
	for end := time.Now().Add(2 * leaseSeconds * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if err := checkCondition(c.get(t), hyperv1.Available, metav1.ConditionTrue); err != nil {
			t.Fatalf("while the CPO renews: %v", err)
		}
	}

	stop()
	silentAt := time.Now()
	testutil.Eventually(t, leaseSeconds*time.Second+5*time.Second, func() error { return checkSilent(c.get(t)) })
	if waited := time.Since(silentAt); waited < leaseSeconds*time.Second-time.Second {
		t.Fatalf("Available went Unknown %s after the last renewal, before the lease duration (%ds)", waited, leaseSeconds)
	}
	t.Logf("Available went Unknown %s after the last renewal", time.Since(silentAt).Round(time.Millisecond))

	// Passes while the Lease stays silent write nothing: Available keeps
	// the time it went Unknown.
	went := meta.FindStatusCondition(c.get(t).Status.Conditions, hyperv1.Available).LastTransitionTime
	for i := range 3 {
		c.touch(t, i)
		time.Sleep(1500 * time.Millisecond)
		if a := meta.FindStatusCondition(c.get(t).Status.Conditions, hyperv1.Available); !a.LastTransitionTime.Equal(&went) {
			t.Fatalf("a pass while the Lease is silent moved Available's lastTransitionTime from %s to %s", went, a.LastTransitionTime)
		}
	}

	// The same holder renewing again ends the silence (no change of
	// holder wakes the HostedCluster then: the end of the silence does).
	renewAs(t, c, "cpo-x", leaseSeconds)
	testutil.Eventually(t, converge, func() error { return checkCondition(c.get(t), hyperv1.Available, metav1.ConditionTrue) })
}

// TestSilenceOutlivesAnOperatorRestart checks that an operator that starts
// (a restart, or a standby taking over) keeps a silence the one before it
// judged: its own clock cannot tell a silent Lease for a whole lease
// duration, and meanwhile Available must not go back to the
// HostedControlPlane's last report, a stale True. A renewal by the same
// holder then ends the silence at once.
func TestSilenceOutlivesAnOperatorRestart(t *testing.T) {
	fencing := func(r *hostedcluster.Reconciler) { r.Fencing = hostedcluster.Fencing{Enabled: true} }
	_, stopFirst := startStoppableOperator(t, fencing)
	c := newCluster(t, "4.17.0", nil)
	awaitControlPlane(t, c)
	const leaseSeconds = 3
	stop := renewAs(t, c, "cpo-x", leaseSeconds)
	reportReady(t, c, "4.17.0")
	testutil.Eventually(t, converge, func() error { return checkCondition(c.get(t), hyperv1.Available, metav1.ConditionTrue) })
	stop()
	silent := func() error { return checkSilent(c.get(t)) }
	testutil.Eventually(t, leaseSeconds*time.Second+5*time.Second, silent)
	went := meta.FindStatusCondition(c.get(t).Status.Conditions, hyperv1.Available).LastTransitionTime

	stopFirst()
	startOperator(t, fencing)
	started := time.Now()
	// A pass of the new operator at once, and more while its clock has
	// not yet seen the Lease silent for a lease duration, and after.
	for i := range 4 {
		c.touch(t, i)
		for end := time.Now().Add(leaseSeconds * time.Second * 2 / 3); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			if err := silent(); err != nil {
				t.Fatalf("%s after the new operator started, the silent Lease's status went back: %v", time.Since(started).Round(100*time.Millisecond), err)
			}
		}
	}
	if a := meta.FindStatusCondition(c.get(t).Status.Conditions, hyperv1.Available); !a.LastTransitionTime.Equal(&went) {
		t.Fatalf("Available's lastTransitionTime moved from %s to %s while the Lease stayed silent", went, a.LastTransitionTime)
	}

	renewed := time.Now()
	renewAs(t, c, "cpo-x", leaseSeconds)
	testutil.Eventually(t, converge, func() error { return checkCondition(c.get(t), hyperv1.Available, metav1.ConditionTrue) })
	t.Logf("Available came back %s after the same holder renewed again", time.Since(renewed).Round(time.Millisecond))
}

// checkSilent checks that hc's Available is Unknown because no
// control-plane-operator renews the Lease.
func checkSilent(hc *hyperv1.HostedCluster) error {
	if err := checkCondition(hc, hyperv1.Available, metav1.ConditionUnknown); err != nil {
		return err
	}
	if a := meta.FindStatusCondition(hc.Status.Conditions, hyperv1.Available); a.Reason != hostedcluster.ControlPlaneOperatorSilentReason {
		return fmt.Errorf("Available is Unknown for %s: %s", a.Reason, a.Message)
	}
	return nil
}
