// Package operator wires the hypershift-operator process: its flags, its
// controller-runtime manager with leader election, health and metrics
// endpoints, the HostedCluster controller, the fencing controller and the
// lease arbiter.
package operator

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/controllers/etcdbackup"
	fencingctrl "github.com/hypershift-le/hypershift/hypershift-operator/controllers/fencing"
	"github.com/hypershift-le/hypershift/hypershift-operator/controllers/hostedcluster"
	"github.com/hypershift-le/hypershift/hypershift-operator/controllers/leasearbiter"
	"github.com/hypershift-le/hypershift/hypershift-operator/controllers/nodepool"
	"github.com/hypershift-le/hypershift/hypershift-operator/nodeheartbeat"
	"github.com/hypershift-le/hypershift/hypershift-operator/render"
	"github.com/hypershift-le/hypershift/support/config"
	"github.com/hypershift-le/hypershift/support/leaderelection"
	"github.com/hypershift-le/hypershift/support/metricsserving"
	"github.com/hypershift-le/hypershift/support/releaseinfo"
	"github.com/hypershift-le/hypershift/support/scheme"
	"github.com/hypershift-le/hypershift/support/startup"
)

// Options are the hypershift-operator's settings, one per flag.
type Options struct {
	// Namespace is where the HO runs and keeps its Lease.
	Namespace string
	// LeaderElect turns the HO's own election on.
	LeaderElect bool
	// Timings are the HO's own timings.
	Timings config.Timings
	// ControlPlaneOperatorTimings are the timings the HO renders into
	// every CPO.
	ControlPlaneOperatorTimings config.Timings
	// ControlPlaneOperatorImage is the CPO image when neither the release
	// payload nor the HostedCluster's annotation names one.
	ControlPlaneOperatorImage string
	// Metrics is where and how the HO serves its metrics.
	Metrics metricsserving.Options
	// HealthProbeBindAddress is where the HO serves its probes; "0" turns
	// them off.
	HealthProbeBindAddress string
	// TeardownTimeout bounds the wait for a CPO to finalize its control plane.
	TeardownTimeout time.Duration
	// InsecureRegistries are registry hosts reached over plain HTTP.
	InsecureRegistries []string
	// EnableFencing binds the fencing policy to every control-plane
	// namespace: the API server refuses writes by CPO pods that do not hold
	// the Lease.
	EnableFencing bool
	// EnableMonitoring renders, in every control-plane namespace, a
	// metrics Service and a Prometheus Operator ServiceMonitor for the
	// control-plane-operator.
	EnableMonitoring bool
	// MaxConcurrentReconciles is how many HostedClusters are reconciled at
	// once.
	MaxConcurrentReconciles int
	// Shards splits the HostedClusters between this many Leases, so that
	// several replicas reconcile them at once; 1 keeps them all under the
	// HO's own Lease.
	Shards int
	// ManagementClusterNetworks and MachineAllowedEndpoints are
	// render.Isolation's, as CIDRs and host:port.
	ManagementClusterNetworks []string
	MachineAllowedEndpoints   []string
}

// DefaultOptions are the flags' defaults.
func DefaultOptions() Options {
	return Options{
		Namespace:                   "hypershift",
		LeaderElect:                 true,
		Timings:                     config.DefaultHypershiftOperatorTimings,
		ControlPlaneOperatorTimings: config.DefaultControlPlaneOperatorTimings,
		Metrics:                     metricsserving.DefaultOptions(),
		HealthProbeBindAddress:      fmt.Sprintf(":%d", hyperv1.HealthPort),
		TeardownTimeout:             hostedcluster.DefaultTeardownTimeout,
		EnableFencing:               true,
		MaxConcurrentReconciles:     config.DefaultMaxConcurrentReconciles,
		Shards:                      1,
	}
}

// AddFlags registers every option on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Namespace, "namespace", o.Namespace, "The namespace the hypershift-operator runs in, where it keeps its Lease.")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "Run only while holding the "+hyperv1.HypershiftOperatorLeaseName+" Lease, so that one replica acts at a time.")
	o.Timings.AddFlags(fs, "", "hypershift-operator")
	o.ControlPlaneOperatorTimings.AddFlags(fs, "cpo-", "control-plane-operator")
	fs.StringVar(&o.ControlPlaneOperatorImage, "control-plane-operator-image", o.ControlPlaneOperatorImage, "The control-plane-operator image to use when neither the release payload nor the "+hyperv1.ControlPlaneOperatorImageAnnotation+" annotation names one.")
	o.Metrics.AddFlags(fs)
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", o.HealthProbeBindAddress, "The address the health and readiness endpoints bind to; 0 turns them off.")
	fs.DurationVar(&o.TeardownTimeout, "teardown-timeout", o.TeardownTimeout, "How long to wait, while no control-plane-operator holds its Lease, for one to finalize its HostedControlPlane before the hypershift-operator finishes the teardown itself.")
	fs.BoolVar(&o.EnableFencing, "enable-fencing", o.EnableFencing, "Have the API server refuse writes by control-plane-operator pods that do not hold their Lease (a ValidatingAdmissionPolicy bound to each control-plane namespace), and, with --leader-elect, by hypershift-operator pods that do not hold the Lease of the HostedCluster's shard (the operator's own with one shard).")
	fs.BoolVar(&o.EnableMonitoring, "enable-monitoring", o.EnableMonitoring, "Give every control-plane-operator a metrics Service and a Prometheus Operator ServiceMonitor that scrapes it over HTTPS with Prometheus's ServiceAccount token (bind the "+metricsserving.ReaderClusterRole+" ClusterRole to it). Without the ServiceMonitor CRD, HostedClusters report Monitoring=False and run on.")
	fs.StringSliceVar(&o.InsecureRegistries, "insecure-registries", o.InsecureRegistries, "Registry hosts to reach over plain HTTP (localhost and 127.0.0.1 always are).")
	fs.StringSliceVar(&o.ManagementClusterNetworks, "management-cluster-networks", o.ManagementClusterNetworks, "CIDRs holding every address of the management cluster (its nodes and their kubelets, pods, Services, API server and etcd). With them, every control-plane namespace gets NetworkPolicies that keep the machines of platform Pod and the hosted kube-apiserver's calls (webhooks, aggregated APIs) off them, except the hosted cluster's published endpoint; they need a pod network that enforces NetworkPolicies. Empty: none.")
	fs.StringSliceVar(&o.MachineAllowedEndpoints, "machine-allowed-endpoints", o.MachineAllowedEndpoints, "IP:port addresses inside --management-cluster-networks that machines of platform Pod may reach all the same, such as the image registry they pull from (and the hosted API endpoint when it is published under a DNS name: only an address gets a rule of its own).")
	fs.IntVar(&o.MaxConcurrentReconciles, "max-concurrent-reconciles", o.MaxConcurrentReconciles, fmt.Sprintf("How many HostedClusters are reconciled at once, from 1 to %d, per shard a replica holds (one HostedCluster is never reconciled twice at once).", config.MaxMaxConcurrentReconciles))
	fs.IntVar(&o.Shards, "shards", o.Shards, fmt.Sprintf("Split the HostedClusters between this many shards, from 1 to %d, each reconciled by the replica holding its Lease ("+hyperv1.HypershiftOperatorLeaseName+"-shard-<i>): the shards are assigned to the live replicas in turn, and move to the survivors when one dies. Every replica must run with the same count. 1: every HostedCluster is reconciled by the holder of the "+hyperv1.HypershiftOperatorLeaseName+" Lease. A HostedCluster's NodePools, etcd backups and lease arbitration go with its shard; the fencing policy stays with the holder of the "+hyperv1.HypershiftOperatorLeaseName+" Lease. With fencing on, the API server refuses a replica's writes in the control-plane namespaces, and to the HostedClusters, NodePools and EtcdBackups, of a shard whose Lease it does not hold.", config.MaxShards))
}

// Validate refuses options the HO must not run with, its own timings and
// the CPO's it renders included: the one validation of each in the process
// (the elector only guards its own, as client-go's does).
func (o Options) Validate() error {
	var errs []error
	if o.Namespace == "" {
		errs = append(errs, errors.New("--namespace must not be empty"))
	}
	if o.LeaderElect {
		if err := o.Timings.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("invalid hypershift-operator timings: %w", err))
		}
	}
	if err := o.ControlPlaneOperatorTimings.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("invalid --cpo-leader-elect-* timings: %w", err))
	}
	if o.TeardownTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--teardown-timeout must be positive, got %s", o.TeardownTimeout))
	}
	if err := config.ValidateMaxConcurrentReconciles(o.MaxConcurrentReconciles); err != nil {
		errs = append(errs, err)
	}
	if err := config.ValidateShards(o.Shards); err != nil {
		errs = append(errs, err)
	} else if o.Shards > 1 && !o.LeaderElect {
		errs = append(errs, fmt.Errorf("--shards=%d needs --leader-elect: a shard is owned through its Lease", o.Shards))
	}
	if _, err := o.isolation(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// perClusterSetup sets up, on a manager, the controllers whose work is
// per HostedCluster, for one shard (the whole when not sharded).
type perClusterSetup func(mgr manager.Manager, shard leaderelection.Shard) error

// addPerClusterControllers runs the controllers whose work is per
// HostedCluster (the HostedCluster controller, and setup's: NodePools,
// etcd backups, the lease arbiter) under the HO's Lease, or, with
// --shards above 1, one of each per shard this replica holds, under the
// shard's Lease: every write for a HostedCluster comes from the holder of
// its shard.
func addPerClusterControllers(mgr *leaderelection.Manager, restConfig *rest.Config, o Options, identity string, reconciler *hostedcluster.Reconciler, setup perClusterSetup) error {
	if o.Shards <= 1 {
		if err := mgr.AddPerTerm(reconciler.SetupWithManager); err != nil {
			return fmt.Errorf("failed to set up the HostedCluster controller: %w", err)
		}
		return mgr.AddPerTerm(func(m manager.Manager) error { return setup(m, leaderelection.Shard{}) })
	}
	shards := make([]*hostedcluster.Reconciler, o.Shards)
	for i := range shards {
		shards[i] = reconciler.ForShard(leaderelection.Shard{Index: i, Count: o.Shards})
	}
	err := mgr.AddShards(restConfig, leaderelection.Sharding{
		Count: o.Shards, Namespace: o.Namespace, Name: hyperv1.HypershiftOperatorLeaseName, Timings: o.Timings, Identity: identity,
	}, func(m manager.Manager, shard int) error {
		if err := shards[shard].SetupWithManager(m); err != nil {
			return fmt.Errorf("failed to set up the HostedCluster controller: %w", err)
		}
		return setup(m, shards[shard].Shard)
	}, mgr.GetLogger())
	if err != nil {
		return fmt.Errorf("failed to set up the HostedCluster shards: %w", err)
	}
	return nil
}

// isolation parses --management-cluster-networks and
// --machine-allowed-endpoints.
func (o Options) isolation() (render.Isolation, error) {
	return render.ParseIsolation(o.ManagementClusterNetworks, o.MachineAllowedEndpoints)
}

// Run runs the HO until ctx ends or it loses its Lease. With leader
// election on, only the holder of the Lease reconciles; the others serve
// health and metrics and wait. Losing the Lease returns an error, which
// must end the process. o must have passed Validate, as startup.RunCommand
// makes sure.
func Run(ctx context.Context, restConfig *rest.Config, o Options) error {
	cacheOptions := hostedcluster.CacheOptions()
	leasearbiter.AddCacheOptions(&cacheOptions)
	etcdbackup.AddCacheOptions(&cacheOptions)
	opts := ctrl.Options{
		Scheme:                 scheme.New(),
		Cache:                  cacheOptions,
		Client:                 hostedcluster.ClientOptions(),
		Metrics:                o.Metrics.ServerOptions(),
		HealthProbeBindAddress: o.HealthProbeBindAddress,
	}
	mgr, elector, err := leaderelection.NewManager(ctx, restConfig, opts, leaderelection.Election{
		Enabled: o.LeaderElect, Namespace: o.Namespace, Name: hyperv1.HypershiftOperatorLeaseName, Timings: o.Timings,
		// Which replica reconciles a HostedCluster is read from it
		// (`hypershift get leaders`); 1 too, for the way back from shards.
		Annotations: map[string]string{hyperv1.OperatorShardsAnnotation: strconv.Itoa(o.Shards)},
	}, ctrl.LoggerFrom(ctx))
	if err != nil {
		return err
	}
	identity := elector.Identity()

	fencing, err := startup.AwaitAPIServer(ctx, func() (hostedcluster.Fencing, error) { return DetectFencing(restConfig, o.EnableFencing) })
	if err != nil {
		return err
	}
	recorder := mgr.GetEventRecorder(hostedcluster.FieldOwner)
	// One provider: the HostedClusters and their NodePools read a payload once.
	releases := releaseinfo.NewRegistryProvider(releaseinfo.WithInsecureRegistries(o.InsecureRegistries...))
	// The kubelets' heartbeats, tracked on every replica (warm when one
	// comes to lead): the lease arbiter releases the Lease of a leader on a
	// lost node, the HostedClusters say when their control planes run only
	// on lost nodes.
	heartbeats := nodeheartbeat.New(nodeheartbeat.DefaultLostAfter, nil)
	if err := heartbeats.Watch(mgr); err != nil {
		return err
	}
	isolation, err := o.isolation()
	if err != nil {
		return err
	}
	reconciler := &hostedcluster.Reconciler{
		Fencing:                          fencing,
		Probe:                            hostedcluster.ImpersonatingProbe{Config: restConfig},
		Client:                           mgr.GetClient(),
		APIReader:                        mgr.GetAPIReader(),
		Releases:                         releases,
		DefaultControlPlaneOperatorImage: o.ControlPlaneOperatorImage,
		ControlPlaneOperatorTimings:      o.ControlPlaneOperatorTimings,
		InsecureRegistries:               o.InsecureRegistries,
		Recorder:                         recorder,
		TeardownTimeout:                  o.TeardownTimeout,
		EnableMonitoring:                 o.EnableMonitoring,
		Heartbeats:                       heartbeats,
		MaxConcurrentReconciles:          o.MaxConcurrentReconciles,
		Isolation:                        isolation,
		Elected:                          o.LeaderElect,
	}
	if err := reconciler.SetupCaches(ctx, mgr); err != nil {
		return err
	}
	leading := func() bool { return elector == nil || elector.Status().Leading }
	if err := metrics.Registry.Register(hostedcluster.NewDurationCollector(ctx, mgr.GetClient(), leading)); err != nil {
		return fmt.Errorf("failed to register the HostedCluster duration metrics: %w", err)
	}
	// Made anew for each term (of each shard): their state is the term's.
	setup := func(m manager.Manager, shard leaderelection.Shard) error {
		// The label the shard's objects carry for the fence of its Lease.
		fenced := ""
		if fencing.Active() && o.LeaderElect {
			fenced = shard.Label()
		}
		pools := &nodepool.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Releases: releases, InsecureRegistries: o.InsecureRegistries, Shard: shard, OperatorShard: fenced}
		if err := pools.SetupWithManager(m); err != nil {
			return fmt.Errorf("failed to set up the NodePool controller: %w", err)
		}
		backups := &etcdbackup.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Shard: shard, OperatorShard: fenced}
		if err := backups.SetupWithManager(m); err != nil {
			return fmt.Errorf("failed to set up the EtcdBackup controller: %w", err)
		}
		arbiter := &leasearbiter.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: recorder, Fencing: fencing.Active(), Heartbeats: heartbeats, Shard: shard}
		if err := arbiter.SetupWithManager(m); err != nil {
			return fmt.Errorf("failed to set up the lease arbiter: %w", err)
		}
		return nil
	}
	if err := addPerClusterControllers(mgr, restConfig, o, identity, reconciler, setup); err != nil {
		return err
	}
	if fencing.Active() {
		fencer := &fencingctrl.Reconciler{Client: mgr.GetClient(), FieldOwner: hostedcluster.FieldOwner, Namespace: o.Namespace, Shards: o.Shards, Elected: o.LeaderElect}
		if err := mgr.AddPerTerm(fencer.SetupWithManager); err != nil {
			return fmt.Errorf("failed to set up the fencing controller: %w", err)
		}
	} else if err := mgr.AddPerTerm(fencingctrl.Unfenced{Reader: mgr.GetAPIReader(), Client: mgr.GetClient()}.Add); err != nil {
		return fmt.Errorf("failed to set up the removal of the operator's fencing bindings: %w", err)
	}
	ctrl.LoggerFrom(ctx).Info("Starting the hypershift-operator", "namespace", o.Namespace, "leaderElect", o.LeaderElect, "identity", identity, "shards", o.Shards)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("the hypershift-operator stopped: %w", err)
	}
	return nil
}
