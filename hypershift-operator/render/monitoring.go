package render

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/metricsserving"
)

// ControlPlaneOperatorMetricsServiceName names the Service in front of the
// CPO's metrics port, as install names the HO's.
const ControlPlaneOperatorMetricsServiceName = hyperv1.ControlPlaneOperatorName + "-metrics"

// MetricsServiceLabels label the CPO's metrics Service: its ServiceMonitor
// selects it by them, and the hypershift-operator watches Services, and no
// others, by them.
func MetricsServiceLabels() map[string]string {
	return map[string]string{appLabel: hyperv1.ControlPlaneOperatorName}
}

// ControlPlaneOperatorMetricsService exposes the metrics port of the CPO's
// pods (every replica serves it, standby included), for
// ControlPlaneOperatorServiceMonitor.
func ControlPlaneOperatorMetricsService(in Inputs) *corev1.Service {
	meta := in.objectMeta(ControlPlaneOperatorMetricsServiceName)
	meta.Labels = MetricsServiceLabels()
	return metricsserving.Service(meta, controlPlaneOperatorSelector())
}

// ControlPlaneOperatorServiceMonitor has a Prometheus Operator scrape the
// CPO's metrics Service as it scrapes the hypershift-operator's: over
// HTTPS, with its ServiceAccount's token, which the CPO authorizes against
// the metrics-reader ClusterRole.
func ControlPlaneOperatorServiceMonitor(in Inputs) *unstructured.Unstructured {
	sm := metricsserving.ServiceMonitor(in.Namespace(), hyperv1.ControlPlaneOperatorName, MetricsServiceLabels(), MetricsServiceLabels())
	sm.SetAnnotations(in.objectMeta(hyperv1.ControlPlaneOperatorName).Annotations)
	return sm
}
