package operator_test

import (
	"testing"

	"github.com/hypershift-le/hypershift/test/metricsscrape"
	"github.com/hypershift-le/hypershift/test/operatorprocess"
)

// TestMetricsNeedAuthorization: the hypershift-operator serves metrics over
// HTTPS to a client the API server authenticates and authorizes for GET
// /metrics (the metrics-reader ClusterRole), and refuses the others.
func TestMetricsNeedAuthorization(t *testing.T) {
	hoNamespace := env.Namespace(t)
	metricsAddr := operatorprocess.FreeAddress(t)
	startProcess(t, hoNamespace, "ho-metrics", "hypershift-operator-metrics", "--metrics-bind-address="+metricsAddr)
	metricsscrape.ExpectAuthorized(t, env.Client, hoNamespace, metricsAddr, "hypershift_leader_election_is_leader")
}
