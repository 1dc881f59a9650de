package hostedcluster

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/leaderelection"
)

// Shards. With --shards=N the HostedClusters are split between N Leases
// (leaderelection.AddShards): a replica runs, for every shard it holds, a
// HostedCluster controller of its own whose work queue takes only the
// HostedClusters of that shard (leaderelection.Shard.NewQueue).

// ForShard returns a reconciler for the HostedClusters of shard, with r's
// settings and caches (SetupCaches must have run on r) and state of its
// own: shards are reconciled side by side, each in its own terms.
func (r *Reconciler) ForShard(shard leaderelection.Shard) *Reconciler {
	return &Reconciler{
		Client:                           r.Client,
		APIReader:                        r.APIReader,
		Releases:                         r.Releases,
		DefaultControlPlaneOperatorImage: r.DefaultControlPlaneOperatorImage,
		ControlPlaneOperatorTimings:      r.ControlPlaneOperatorTimings,
		InsecureRegistries:               r.InsecureRegistries,
		Isolation:                        r.Isolation,
		Recorder:                         r.Recorder,
		Clock:                            r.Clock,
		TeardownTimeout:                  r.TeardownTimeout,
		Fencing:                          r.Fencing,
		Probe:                            r.Probe,
		ReleaseRecheckInterval:           r.ReleaseRecheckInterval,
		EnableMonitoring:                 r.EnableMonitoring,
		Heartbeats:                       r.Heartbeats,
		MaxConcurrentReconciles:          r.MaxConcurrentReconciles,
		Shard:                            shard,
		Elected:                          r.Elected,

		kubeconfigs: r.kubeconfigs,
		pullSecrets: r.pullSecrets,
		secrets:     r.secrets,
		cache:       r.cache,
	}
}

// ShardKey is the shard key of a HostedCluster request: the cluster's.
func ShardKey(_ context.Context, req reconcile.Request) (string, bool) {
	return hyperv1.HostedClusterShardKey(req.Namespace, req.Name), true
}

// operatorShard is the OperatorShardLabel value this reconciler's
// control-plane namespaces, HostedClusters and admin kubeconfig copies
// carry (render.Inputs.OperatorShard, render.SetOperatorShard), which
// binds them to the fence of their shard's Lease: its shard's ("0-of-1"
// for the whole) when the HO fences and runs under a Lease; "" otherwise,
// which removes the label from a HostedCluster (a namespace keeps it: the
// applier sends nothing for a label it does not render; no binding
// selects it then).
func (r *Reconciler) operatorShard() string {
	if !r.Fencing.Active() || !r.Elected {
		return ""
	}
	return r.Shard.Label()
}
