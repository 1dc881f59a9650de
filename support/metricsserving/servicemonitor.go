package metricsserving

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ServiceMonitorKind is the Prometheus Operator's ServiceMonitor. It is
// rendered unstructured: the CRD may not be installed, and its Go types
// are not worth the dependency.
var ServiceMonitorKind = schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "ServiceMonitor"}

// ServiceMonitor has a Prometheus Operator scrape the port named
// PortName of the Services that selector matches in namespace, as an
// operator serving with Options.Secure expects: over HTTPS, with the
// scraper's ServiceAccount token (bind ReaderClusterRole to it). The
// operator's certificate is self-signed unless it is given one
// (--metrics-cert-dir), so the scrape does not verify it.
func ServiceMonitor(namespace, name string, labels, selector map[string]string) *unstructured.Unstructured {
	sm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": ServiceMonitorKind.GroupVersion().String(),
		"kind":       ServiceMonitorKind.Kind,
		"metadata":   map[string]any{"namespace": namespace, "name": name},
		"spec": map[string]any{
			"selector": map[string]any{"matchLabels": toAny(selector)},
			"endpoints": []any{map[string]any{
				"port":            PortName,
				"scheme":          "https",
				"bearerTokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token",
				"tlsConfig":       map[string]any{"insecureSkipVerify": true},
			}},
		},
	}}
	sm.SetLabels(labels)
	return sm
}

// PortName names the metrics port of an operator's container and Service.
const PortName = "metrics"

func toAny(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
