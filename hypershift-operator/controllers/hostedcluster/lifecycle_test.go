package hostedcluster_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/controllers/hostedcluster"
	"github.com/hypershift-le/hypershift/support/testutil"
)

// reportReady writes the HostedControlPlane status a CPO writes once the
// release runs.
func reportReady(t *testing.T, c *cluster, version string) {
	t.Helper()
	testutil.Eventually(t, converge, func() error {
		hcp := &hyperv1.HostedControlPlane{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: c.controlPlaneNamespace(), Name: c.hc.Name}, hcp); err != nil {
			return err
		}
		hcp.Status.Ready = true
		hcp.Status.Version = version
		hcp.Status.ReleaseImage = hcp.Spec.ReleaseImage
		hcp.Status.Conditions = []metav1.Condition{{
			Type: hyperv1.Available, Status: metav1.ConditionTrue, Reason: "AsExpected",
			Message: "All components are available", LastTransitionTime: metav1.Now(),
		}}
		return env.Client.Status().Update(t.Context(), hcp)
	})
}

// TestUpgrade changes spec.release.image and checks the rollout.
func TestUpgrade(t *testing.T) {
	startOperator(t, nil)
	c := newCluster(t, "4.17.0", nil)
	reportReady(t, c, "4.17.0")
	testutil.Eventually(t, converge, func() error {
		hc := c.get(t)
		if err := checkCondition(hc, hyperv1.Available, metav1.ConditionTrue); err != nil {
			return err
		}
		if err := checkCondition(hc, hyperv1.Progressing, metav1.ConditionFalse); err != nil {
			return err
		}
		if h := hc.Status.Version.History; len(h) != 1 || h[0].State != configv1.CompletedUpdate || h[0].CompletionTime == nil {
			return fmt.Errorf("history %+v", h)
		}
		return nil
	})

	next := c.pushRelease(t, "4.17.1")
	c.update(t, func(hc *hyperv1.HostedCluster) { hc.Spec.Release.Image = next })
	testutil.Eventually(t, converge, func() error {
		d := &appsv1.Deployment{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: c.controlPlaneNamespace(), Name: "control-plane-operator"}, d); err != nil {
			return err
		}
		if err := checkDeployment(d, c.cpoImage("4.17.1"), c.pin(t, next), 1); err != nil {
			return err
		}
		hcp := &hyperv1.HostedControlPlane{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: c.controlPlaneNamespace(), Name: c.hc.Name}, hcp); err != nil {
			return err
		}
		if hcp.Spec.ReleaseImage != c.pin(t, next) {
			return fmt.Errorf("HostedControlPlane releaseImage = %q, want %q", hcp.Spec.ReleaseImage, c.pin(t, next))
		}
		hc := c.get(t)
		if err := checkCondition(hc, hyperv1.Progressing, metav1.ConditionTrue); err != nil {
			return err
		}
		h := hc.Status.Version.History
		if len(h) != 2 || h[0].Version != "4.17.1" || h[0].State != configv1.PartialUpdate || h[1].Version != "4.17.0" || h[1].State != configv1.CompletedUpdate {
			return fmt.Errorf("history %+v", h)
		}
		return nil
	})

	reportReady(t, c, "4.17.1")
	testutil.Eventually(t, converge, func() error {
		hc := c.get(t)
		if h := hc.Status.Version.History; len(h) != 2 || h[0].State != configv1.CompletedUpdate {
			return fmt.Errorf("history %+v", h)
		}
		return checkCondition(hc, hyperv1.Progressing, metav1.ConditionFalse)
	})
}

// TestDelete checks the teardown order: HostedControlPlane (finalized by its
// CPO), then the namespace, then the HostedCluster's finalizer.
func TestDelete(t *testing.T) {
	t.Run("when the CPO finalizes its HostedControlPlane, the teardown follows it", func(t *testing.T) {
		startOperator(t, func(r *hostedcluster.Reconciler) { r.TeardownTimeout = time.Hour })
		c, hcp := deleteWithFinalizedControlPlane(t)
		testutil.Eventually(t, converge, func() error {
			if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(hcp), hcp); err != nil {
				return err
			}
			if hcp.DeletionTimestamp.IsZero() {
				return errors.New("the HostedControlPlane is not being deleted")
			}
			return nil
		})
		// While the CPO has not finalized, the namespace stays and so does the HostedCluster.
		time.Sleep(2 * time.Second)
		ns := &corev1.Namespace{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Name: c.controlPlaneNamespace()}, ns); err != nil || !ns.DeletionTimestamp.IsZero() {
			t.Fatalf("the namespace must stay until the HostedControlPlane is gone: err=%v deleting=%v", err, ns.DeletionTimestamp)
		}
		c.get(t)

		patch := client.MergeFrom(hcp.DeepCopy())
		hcp.Finalizers = nil
		if err := env.Client.Patch(t.Context(), hcp, patch); err != nil {
			t.Fatal(err)
		}
		awaitGone(t, c)
		// Each step of the teardown is told once, in an event.
		testutil.Eventually(t, converge, func() error {
			list := &eventsv1.EventList{}
			if err := env.Client.List(t.Context(), list, client.InNamespace(c.hc.Namespace)); err != nil {
				return err
			}
			steps := map[string]int{}
			for _, e := range list.Items {
				if e.Regarding.Name == c.hc.Name && e.Type == corev1.EventTypeNormal && e.Action == "Teardown" {
					n := 1
					if e.Series != nil {
						n = int(e.Series.Count)
					}
					steps[e.Reason] += n
				}
			}
			for _, reason := range []string{hostedcluster.DeletingControlPlaneReason, hostedcluster.DeletingNamespaceReason, hostedcluster.TornDownReason} {
				if steps[reason] != 1 {
					return fmt.Errorf("teardown events %v, want one of each step", steps)
				}
			}
			return nil
		})
	})

	t.Run("the cluster's NodePools go first, before its control plane", func(t *testing.T) {
		startOperator(t, func(r *hostedcluster.Reconciler) { r.TeardownTimeout = time.Hour })
		c := newCluster(t, "4.17.0", nil)
		// The pool holds itself with a finalizer, as the NodePool
		// controller does while its machines and token go; a pool of
		// another cluster in the namespace is left alone.
		pool := func(name, cluster string) *hyperv1.NodePool {
			np := &hyperv1.NodePool{
				ObjectMeta: metav1.ObjectMeta{Namespace: c.hc.Namespace, Name: name, Finalizers: []string{"test.hypershift.openshift.io/machines"}},
				Spec: hyperv1.NodePoolSpec{
					ClusterName: cluster, Release: c.hc.Spec.Release, Replicas: ptr.To(int32(1)),
					Platform:   hyperv1.NodePoolPlatform{Type: hyperv1.NonePlatform},
					Management: hyperv1.NodePoolManagement{UpgradeType: hyperv1.UpgradeTypeReplace},
				},
			}
			if err := env.Client.Create(t.Context(), np); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				patch := client.MergeFrom(np.DeepCopy())
				np.Finalizers = nil
				_ = client.IgnoreNotFound(env.Client.Patch(context.Background(), np, patch))
				_ = client.IgnoreNotFound(env.Client.Delete(context.Background(), np))
			})
			return np
		}
		ours, theirs := pool("workers", c.hc.Name), pool("other-workers", "other")
		hcp := finalizeAndDelete(t, c)
		testutil.Eventually(t, converge, func() error {
			if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(ours), ours); err != nil {
				return err
			}
			if ours.DeletionTimestamp.IsZero() {
				return errors.New("the cluster's NodePool is not being deleted")
			}
			return nil
		})
		// While the pool stays, the control plane stays.
		time.Sleep(2 * time.Second)
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(hcp), hcp); err != nil || !hcp.DeletionTimestamp.IsZero() {
			t.Fatalf("the HostedControlPlane must stay until the cluster's NodePools are gone: err=%v deleting=%v", err, hcp.DeletionTimestamp)
		}
		patch := client.MergeFrom(ours.DeepCopy())
		ours.Finalizers = nil
		if err := env.Client.Patch(t.Context(), ours, patch); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, converge, func() error {
			if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(hcp), hcp); err != nil {
				return err
			}
			if hcp.DeletionTimestamp.IsZero() {
				return errors.New("the HostedControlPlane is not being deleted after the NodePools went")
			}
			return nil
		})
		patch = client.MergeFrom(hcp.DeepCopy())
		hcp.Finalizers = nil
		if err := env.Client.Patch(t.Context(), hcp, patch); err != nil {
			t.Fatal(err)
		}
		awaitGone(t, c)
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(theirs), theirs); err != nil || !theirs.DeletionTimestamp.IsZero() {
			t.Errorf("another cluster's NodePool: err=%v deleting=%v, want left alone", err, theirs.DeletionTimestamp)
		}
	})

	t.Run("when no CPO holds the Lease, the HO finishes the teardown itself and says so", func(t *testing.T) {
		startOperator(t, nil) // a 3s teardown timeout
		c, _ := deleteWithFinalizedControlPlane(t)
		awaitGone(t, c)
		testutil.Eventually(t, converge, func() error {
			list := &eventsv1.EventList{}
			if err := env.Client.List(t.Context(), list, client.InNamespace(c.hc.Namespace)); err != nil {
				return err
			}
			for _, e := range list.Items {
				if e.Reason == "ControlPlaneOperatorUnavailable" && e.Regarding.Name == c.hc.Name && e.Type == corev1.EventTypeWarning {
					return nil
				}
			}
			return fmt.Errorf("no ControlPlaneOperatorUnavailable event among %d", len(list.Items))
		})
	})

	t.Run("when the CPO's clock is skewed, the teardown judges its Lease by the changes it sees, not by renewTime", func(t *testing.T) {
		startOperator(t, nil) // a 3s teardown timeout
		const leaseSeconds = 3
		c := newCluster(t, "4.17.0", nil)
		awaitControlPlane(t, c)
		// Its clock an hour behind: every renewTime plus the lease
		// duration lies in the past, yet it renews every second.
		stop := renewWithSkew(t, c, "cpo-behind", leaseSeconds, -time.Hour)
		hcp := finalizeAndDelete(t, c)
		for end := time.Now().Add(3*time.Second + 3*leaseSeconds*time.Second); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
			if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(hcp), hcp); err != nil {
				t.Fatalf("while a CPO renews the Lease: %v", err)
			}
			if len(hcp.Finalizers) == 0 {
				t.Fatal("the HO removed the HostedControlPlane's finalizers while a CPO renewed the Lease")
			}
		}
		stop()
		// Its last renewal from a clock an hour ahead: renewTime plus the
		// lease duration lies an hour in the future, yet nobody renews.
		stopAhead := renewWithSkew(t, c, "cpo-ahead", leaseSeconds, time.Hour)
		stopAhead()
		awaitGone(t, c)
	})
}

// deleteWithFinalizedControlPlane creates a HostedCluster, holds its
// HostedControlPlane with a finalizer as a CPO does, and deletes the
// HostedCluster.
func deleteWithFinalizedControlPlane(t *testing.T) (*cluster, *hyperv1.HostedControlPlane) {
	t.Helper()
	c := newCluster(t, "4.17.0", nil)
	return c, finalizeAndDelete(t, c)
}

// finalizeAndDelete holds c's HostedControlPlane with a finalizer as a CPO
// does, and deletes the HostedCluster.
func finalizeAndDelete(t *testing.T, c *cluster) *hyperv1.HostedControlPlane {
	t.Helper()
	hcp := awaitControlPlane(t, c)
	patch := client.MergeFrom(hcp.DeepCopy())
	controllerutil.AddFinalizer(hcp, "control-plane-operator.hypershift.openshift.io/finalizer")
	if err := env.Client.Patch(t.Context(), hcp, patch); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(t.Context(), c.get(t)); err != nil {
		t.Fatal(err)
	}
	return hcp
}

func awaitControlPlane(t *testing.T, c *cluster) *hyperv1.HostedControlPlane {
	t.Helper()
	hcp := &hyperv1.HostedControlPlane{}
	testutil.Eventually(t, converge, func() error {
		return env.Client.Get(t.Context(), client.ObjectKey{Namespace: c.controlPlaneNamespace(), Name: c.hc.Name}, hcp)
	})
	testutil.Eventually(t, converge, func() error {
		if !slices.Contains(c.get(t).Finalizers, hyperv1.Finalizer) {
			return errors.New("no finalizer yet")
		}
		return nil
	})
	return hcp
}

// awaitGone waits for the namespace and then the HostedCluster to go.
func awaitGone(t *testing.T, c *cluster) {
	t.Helper()
	testutil.Eventually(t, 2*converge, func() error {
		if err := env.Client.Get(t.Context(), client.ObjectKey{Name: c.controlPlaneNamespace()}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the control-plane namespace is still there (%w)", err)
		}
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(c.hc), &hyperv1.HostedCluster{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the HostedCluster is still there (%w)", err)
		}
		return nil
	})
}
