// Package metricsserving owns how both operators serve their metrics and
// how a Prometheus Operator scrapes them: the flags they share
// (--metrics-bind-address, --metrics-secure, --metrics-cert-dir), the
// controller-runtime metrics server options those flags turn into (HTTPS to
// clients the API server authenticates with a TokenReview and authorizes
// with a SubjectAccessReview for GET /metrics), and the ServiceMonitor that
// scrapes such an endpoint.
package metricsserving

import (
	"fmt"

	"github.com/spf13/pflag"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
)

// ReaderClusterRole names the ClusterRole that allows GET /metrics: bind it
// to a scraper (Prometheus's ServiceAccount, say) to let it read either
// operator's metrics.
const ReaderClusterRole = "hypershift-metrics-reader"

// Options are where and how an operator serves its metrics.
type Options struct {
	// BindAddress is where the endpoint listens; "0" turns it off.
	BindAddress string
	// Secure serves HTTPS with authentication and authorization; false
	// serves plain HTTP to anyone who reaches the port.
	Secure bool
	// CertDir holds tls.crt and tls.key; empty means a self-signed
	// certificate, made when the operator starts.
	CertDir string
}

// DefaultOptions serve HTTPS with authorization on the shared metrics port.
func DefaultOptions() Options {
	return Options{BindAddress: fmt.Sprintf(":%d", hyperv1.MetricsPort), Secure: true}
}

// AddFlags registers --metrics-bind-address, --metrics-secure and
// --metrics-cert-dir on fs, with o's values as defaults.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.BindAddress, "metrics-bind-address", o.BindAddress, "The address the metrics endpoint binds to; 0 turns it off.")
	fs.BoolVar(&o.Secure, "metrics-secure", o.Secure, "Serve metrics over HTTPS to clients the API server authenticates and authorizes for GET /metrics (the "+ReaderClusterRole+" ClusterRole); false serves plain HTTP to anyone.")
	fs.StringVar(&o.CertDir, "metrics-cert-dir", o.CertDir, "A directory with tls.crt and tls.key for the metrics endpoint (reloaded when they change); by default a self-signed certificate.")
}

// ServerOptions are the controller-runtime metrics server options for o.
// Secure serving needs the operator's identity to hold cluster-wide create
// on tokenreviews (authentication.k8s.io) and subjectaccessreviews
// (authorization.k8s.io), as the ClusterRole system:auth-delegator grants.
func (o Options) ServerOptions() metricsserver.Options {
	opts := metricsserver.Options{BindAddress: o.BindAddress}
	if o.Secure {
		opts.SecureServing = true
		opts.FilterProvider = filters.WithAuthenticationAndAuthorization
		opts.CertDir = o.CertDir
	}
	return opts
}
