package hostedcluster_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/controllers/hostedcluster"
	"github.com/hypershift-le/hypershift/hypershift-operator/rbac"
	"github.com/hypershift-le/hypershift/hypershift-operator/render"
	"github.com/hypershift-le/hypershift/support/metricsserving"
	"github.com/hypershift-le/hypershift/support/testutil"
	"github.com/hypershift-le/hypershift/test/metricsscrape"
)

// TestAuthDelegatorBinding: the HO binds system:auth-delegator to each
// CPO's ServiceAccount, for its authorized metrics, with its own
// ClusterRole's rights alone, and the teardown removes the binding, which
// the namespace's deletion would leave behind.
func TestAuthDelegatorBinding(t *testing.T) {
	startOperator(t, nil)
	c := newCluster(t, "4.17.0", nil)
	ns := c.controlPlaneNamespace()
	key := client.ObjectKey{Name: render.AuthDelegatorBindingName(ns)}
	binding := &rbacv1.ClusterRoleBinding{}
	testutil.Eventually(t, converge, func() error { return env.Client.Get(t.Context(), key, binding) })
	if binding.RoleRef.Name != rbac.AuthDelegatorClusterRole || len(binding.Subjects) != 1 ||
		binding.Subjects[0].Kind != rbacv1.ServiceAccountKind || binding.Subjects[0].Namespace != ns || binding.Subjects[0].Name != hyperv1.ControlPlaneOperatorName {
		t.Fatalf("binding %s grants %s to %v, want %s to ServiceAccount %s/%s", key.Name, binding.RoleRef.Name, binding.Subjects, rbac.AuthDelegatorClusterRole, ns, hyperv1.ControlPlaneOperatorName)
	}

	if err := env.Client.Delete(t.Context(), c.get(t)); err != nil {
		t.Fatal(err)
	}
	awaitGone(t, c)
	testutil.Eventually(t, converge, func() error {
		if err := env.Client.Get(t.Context(), key, &rbacv1.ClusterRoleBinding{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("ClusterRoleBinding %s outlives its cluster (get: %w)", key.Name, err)
		}
		return nil
	})
}

// TestMonitoring: with --enable-monitoring, a cluster without the
// ServiceMonitor CRD says so (Monitoring=False, a Warning event) and its
// control plane starts all the same; once the CRD is installed, the
// control-plane namespace gets the CPO's metrics Service and a
// ServiceMonitor that scrapes it over HTTPS; an operator without the flag
// removes both.
func TestMonitoring(t *testing.T) {
	_, stop := startStoppableOperator(t, func(r *hostedcluster.Reconciler) { r.EnableMonitoring = true })
	c := newCluster(t, "4.17.0", nil)
	ns := c.controlPlaneNamespace()

	testutil.Eventually(t, converge, func() error {
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: hyperv1.ControlPlaneOperatorName}, &appsv1.Deployment{}); err != nil {
			return fmt.Errorf("no CPO Deployment: %w", err)
		}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: render.ControlPlaneOperatorMetricsServiceName}, &corev1.Service{}); err != nil {
			return fmt.Errorf("no metrics Service: %w", err)
		}
		hc := c.get(t)
		if err := checkCondition(hc, hostedcluster.Monitoring, metav1.ConditionFalse); err != nil {
			return err
		}
		if reason := meta.FindStatusCondition(hc.Status.Conditions, hostedcluster.Monitoring).Reason; reason != hostedcluster.ServiceMonitorCRDMissingReason {
			return fmt.Errorf("Monitoring is False for %s, want %s", reason, hostedcluster.ServiceMonitorCRDMissingReason)
		}
		return warned(t, c, hostedcluster.ServiceMonitorCRDMissingReason)
	})

	crd := metricsscrape.ServiceMonitorCRD()
	if err := env.Client.Create(t.Context(), crd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), crd) })
	// The HO looks again every few minutes; a change of the HostedCluster
	// makes it look now.
	testutil.Eventually(t, converge, func() error {
		c.update(t, func(hc *hyperv1.HostedCluster) {
			if hc.Annotations == nil {
				hc.Annotations = map[string]string{}
			}
			hc.Annotations["test.hypershift.openshift.io/poke"] = time.Now().String()
		})
		sm := &unstructured.Unstructured{}
		sm.SetGroupVersionKind(metricsserving.ServiceMonitorKind)
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: hyperv1.ControlPlaneOperatorName}, sm); err != nil {
			return fmt.Errorf("no ServiceMonitor: %w", err)
		}
		if endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints"); len(endpoints) != 1 || endpoints[0].(map[string]any)["scheme"] != "https" {
			return fmt.Errorf("the ServiceMonitor's endpoints are %v, want one over https", endpoints)
		}
		return checkCondition(c.get(t), hostedcluster.Monitoring, metav1.ConditionTrue)
	})

	// Run without the flag: both go, and so does the condition.
	stop()
	startOperator(t, nil)
	testutil.Eventually(t, converge, func() error {
		sm := &unstructured.Unstructured{}
		sm.SetGroupVersionKind(metricsserving.ServiceMonitorKind)
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: hyperv1.ControlPlaneOperatorName}, sm); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the ServiceMonitor is still there (%w)", err)
		}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: render.ControlPlaneOperatorMetricsServiceName}, &corev1.Service{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the metrics Service is still there (%w)", err)
		}
		if cond := meta.FindStatusCondition(c.get(t).Status.Conditions, hostedcluster.Monitoring); cond != nil {
			return fmt.Errorf("condition Monitoring is still there: %+v", cond)
		}
		return nil
	})
}

// warned returns nil once the HostedCluster has a Warning event of reason.
func warned(t *testing.T, c *cluster, reason string) error {
	list := &eventsv1.EventList{}
	if err := env.Client.List(t.Context(), list, client.InNamespace(c.hc.Namespace)); err != nil {
		return err
	}
	for _, e := range list.Items {
		if e.Regarding.Name == c.hc.Name && e.Type == corev1.EventTypeWarning && e.Reason == reason {
			return nil
		}
	}
	return fmt.Errorf("no Warning event %s among %d", reason, len(list.Items))
}
