package hostedcontrolplane

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	// releaseMismatch is 1 while the HostedControlPlane asks for a release
	// other than the one this CPO operates on, and it therefore writes nothing.
	releaseMismatch = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "control_plane_operator_release_image_mismatch",
		Help: "1 while the HostedControlPlane's release image differs from OPERATE_ON_RELEASE_IMAGE, so this control-plane-operator writes nothing.",
	})

	// fencedWrites counts the writes, of any kind, the API server refused
	// because this pod does not hold the Lease.
	fencedWrites = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "control_plane_operator_fenced_writes_total",
		Help: "Writes (creates, updates, patches, applies, deletes, status updates) the API server refused because this control-plane-operator pod does not hold the Lease.",
	})
)

func init() {
	metrics.Registry.MustRegister(releaseMismatch, fencedWrites)
}
