package hostedcluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/render"
	"github.com/hypershift-le/hypershift/support/metricsserving"
)

// Monitoring and ServiceMonitorCRDMissingReason are hyperv1's names, kept
// here for those that name them from this package.
const (
	Monitoring                     = hyperv1.Monitoring
	ServiceMonitorCRDMissingReason = hyperv1.ServiceMonitorCRDMissingReason
)

// monitoringRetry is how often a cluster without the ServiceMonitor CRD is
// looked at again, so that the ServiceMonitors follow once it is installed.
const monitoringRetry = 5 * time.Minute

// reconcileMonitoring, with --enable-monitoring, applies the CPO's metrics
// Service and ServiceMonitor, and otherwise removes what a run with it
// left. A cluster without the ServiceMonitor CRD gets Monitoring=False
// and a Warning event once, and the rest of the control plane runs on:
// monitoring is never a reason to stop.
func (r *Reconciler) reconcileMonitoring(ctx context.Context, s *scope) (ctrl.Result, error) {
	in := render.Inputs{HostedCluster: s.hc}
	if !r.EnableMonitoring {
		s.monitoringOff = true
		return ctrl.Result{}, r.removeMonitoring(ctx, in)
	}
	apply := r.applier()
	if _, err := apply.Apply(ctx, render.ControlPlaneOperatorMetricsService(in)); err != nil {
		return ctrl.Result{}, err
	}
	if _, err := apply.Apply(ctx, render.ControlPlaneOperatorServiceMonitor(in)); err != nil {
		if !meta.IsNoMatchError(err) {
			return ctrl.Result{}, err
		}
		s.monitoring = &finding{metav1.ConditionFalse, hyperv1.ServiceMonitorCRDMissingReason,
			"The hypershift-operator runs with --enable-monitoring, but this cluster has no ServiceMonitor CRD (" + metricsserving.ServiceMonitorKind.GroupVersion().String() +
				"): install the Prometheus Operator, or run the operator without the flag; the control-plane-operator's metrics are not scraped until then"}
		return ctrl.Result{RequeueAfter: monitoringRetry}, nil
	}
	s.monitoring = &finding{metav1.ConditionTrue, hyperv1.AsExpectedReason,
		"The control-plane-operator's metrics Service and ServiceMonitor are in place"}
	return ctrl.Result{}, nil
}

// removeMonitoring deletes the ServiceMonitor and the metrics Service that
// a run with --enable-monitoring applied. The Service, which the cache
// holds, tells whether there is anything to remove: a converged pass reads
// nothing from the API server.
func (r *Reconciler) removeMonitoring(ctx context.Context, in render.Inputs) error {
	service := &corev1.Service{}
	key := client.ObjectKey{Namespace: in.Namespace(), Name: render.ControlPlaneOperatorMetricsServiceName}
	if err := r.Client.Get(ctx, key, service); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("failed to get Service %s: %w", key, err)
	}
	if service.Annotations[hyperv1.ClusterAnnotation] != render.ClusterKey(in.HostedCluster) {
		return nil
	}
	sm := render.ControlPlaneOperatorServiceMonitor(in)
	if err := r.Client.Delete(ctx, sm); err != nil && !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) {
		return fmt.Errorf("failed to delete ServiceMonitor %s (monitoring is off): %w", key.Namespace+"/"+sm.GetName(), err)
	}
	if err := r.Client.Delete(ctx, service); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("failed to delete Service %s (monitoring is off): %w", key, err)
	}
	return nil
}
