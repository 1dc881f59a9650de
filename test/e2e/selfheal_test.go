package e2e

import (
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/testutil"
)

// testNamespaceDeleted: a control-plane namespace deleted by hand is gone
// within 60s (nothing in it stays stuck), the HostedCluster says so in the
// meantime, and its control plane is back and Available within 120s.
func testNamespaceDeleted(t *testing.T) {
	ns := controlPlaneNamespace("demo")
	key := client.ObjectKey{Namespace: "clusters", Name: "demo"}
	old := &corev1.Namespace{}
	if err := lc.Env.Client.Get(t.Context(), client.ObjectKey{Name: ns}, old); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := lc.Env.Client.Delete(t.Context(), old); err != nil {
		t.Fatal(err)
	}

	sawDeleting := false
	checkDeleting := func() {
		hc := &hyperv1.HostedCluster{}
		if err := lc.Env.Client.Get(t.Context(), key, hc); err == nil {
			if c := meta.FindStatusCondition(hc.Status.Conditions, hyperv1.Available); c != nil && c.Status == metav1.ConditionFalse && c.Reason == "ControlPlaneNamespaceDeleting" {
				sawDeleting = true
			}
		}
	}
	testutil.Eventually(t, 60*time.Second, func() error {
		checkDeleting()
		current := &corev1.Namespace{}
		err := lc.Env.Client.Get(t.Context(), client.ObjectKey{Name: ns}, current)
		if err == nil && current.UID == old.UID {
			return fmt.Errorf("the deleted namespace is still there (%s)", current.Status.Phase)
		}
		return client.IgnoreNotFound(err)
	})
	t.Logf("the deleted namespace was gone after %s", time.Since(start).Round(time.Millisecond))

	testutil.Eventually(t, 120*time.Second-time.Since(start), func() error {
		checkDeleting()
		hc := &hyperv1.HostedCluster{}
		if err := lc.Env.Client.Get(t.Context(), key, hc); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(hc.Status.Conditions, hyperv1.Available); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("Available: %+v", c)
		}
		pods := cpoPods(t, ns)
		if len(pods) == 0 || holder(t, ns) != pods[0].Name {
			return errors.New("no control-plane-operator holds the new Lease yet")
		}
		return nil
	})
	t.Logf("the control plane was Available again %s after the deletion", time.Since(start).Round(time.Millisecond))
	if !sawDeleting {
		t.Error("the HostedCluster never said its control-plane namespace was being deleted")
	}
	events := &eventsv1.EventList{}
	if err := lc.Env.Client.List(t.Context(), events, client.InNamespace("clusters")); err != nil {
		t.Fatal(err)
	}
	for _, reason := range []string{"ControlPlaneNamespaceDeleting", "ControlPlaneRebuilding"} {
		found := false
		for _, e := range events.Items {
			found = found || (e.Regarding.Name == "demo" && e.Reason == reason && e.EventTime.After(start))
		}
		if !found {
			t.Errorf("no %s event on the HostedCluster", reason)
		}
	}
}
