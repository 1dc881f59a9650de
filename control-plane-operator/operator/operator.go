// Package operator wires the control-plane-operator process: its
// component-base flags, a namespace-scoped manager whose writing controllers
// run only while it holds the Lease, and health and metrics endpoints that
// every replica serves.
package operator

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/control-plane-operator/controllers/hostedclusterconfig"
	"github.com/hypershift-le/hypershift/control-plane-operator/controllers/hostedcontrolplane"
	"github.com/hypershift-le/hypershift/control-plane-operator/controllers/podmachine"
	"github.com/hypershift-le/hypershift/support/config"
	"github.com/hypershift-le/hypershift/support/leaderelection"
	"github.com/hypershift-le/hypershift/support/metricsserving"
	"github.com/hypershift-le/hypershift/support/releaseinfo"
	"github.com/hypershift-le/hypershift/support/scheme"
)

// Options are the control-plane-operator's settings, one per flag.
type Options struct {
	// Namespace is the control-plane namespace the CPO acts in.
	Namespace string
	// HostedControlPlane names the one HostedControlPlane in Namespace the
	// CPO reconciles.
	HostedControlPlane string
	// LeaderElect turns election on. The hypershift-operator always renders
	// true; false exists for tests that must show what goes wrong without it.
	LeaderElect bool
	// LeaderElectResourceName is the Lease's name.
	LeaderElectResourceName string
	// Timings are the timings.
	Timings config.Timings
	// Metrics is where and how the CPO serves its metrics: as the
	// hypershift-operator does, over HTTPS to clients the API server
	// authorizes, unless --metrics-secure=false.
	Metrics metricsserving.Options
	// HealthProbeBindAddress is where the CPO serves its probes; "0" turns
	// them off.
	HealthProbeBindAddress string
	// OperateOnReleaseImage is the release this CPO was rolled out for.
	OperateOnReleaseImage string
	// InsecureRegistries are registry hosts reached over plain HTTP.
	InsecureRegistries []string
	// Platform is the HostedControlPlane's platform (it cannot change):
	// on Pod, the CPO also runs the machines of the NodePools (package
	// podmachine).
	Platform hyperv1.PlatformType
}

// DefaultOptions are the flags' defaults.
func DefaultOptions() Options {
	return Options{
		LeaderElect:             true,
		LeaderElectResourceName: hyperv1.ControlPlaneOperatorLeaseName,
		Timings:                 config.DefaultControlPlaneOperatorTimings,
		Metrics:                 metricsserving.DefaultOptions(),
		HealthProbeBindAddress:  fmt.Sprintf(":%d", hyperv1.HealthPort),
		OperateOnReleaseImage:   os.Getenv(hyperv1.OperateOnReleaseImageEnv),
		Platform:                hyperv1.NonePlatform,
	}
}

// AddFlags registers every option on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Namespace, "namespace", o.Namespace, "The control-plane namespace to act in (required).")
	fs.StringVar(&o.HostedControlPlane, "hosted-control-plane", o.HostedControlPlane, "The name of the HostedControlPlane in --namespace to reconcile (required); no other is read or written.")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "Act only while holding the Lease. Turning it off lets several replicas write at once.")
	fs.StringVar(&o.LeaderElectResourceName, "leader-elect-resource-name", o.LeaderElectResourceName, "The name of the Lease in --namespace.")
	o.Timings.AddFlags(fs, "", "control-plane-operator")
	o.Metrics.AddFlags(fs)
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", o.HealthProbeBindAddress, "The address the health and readiness endpoints bind to; 0 turns them off.")
	fs.StringSliceVar(&o.InsecureRegistries, "insecure-registries", o.InsecureRegistries, "Registry hosts to reach over plain HTTP (localhost and 127.0.0.1 always are).")
	fs.StringVar((*string)(&o.Platform), "platform", string(o.Platform), "The HostedControlPlane's platform: None, or Pod (the CPO then runs the NodePools' machines as Pods).")
}

// Validate refuses options the CPO must not run with, its timings included:
// their one validation in the process (the elector only guards them, as
// client-go's does).
func (o Options) Validate() error {
	var errs []error
	if o.Namespace == "" {
		errs = append(errs, errors.New("--namespace is required"))
	}
	if o.HostedControlPlane == "" {
		errs = append(errs, errors.New("--hosted-control-plane is required"))
	}
	if o.Platform != hyperv1.NonePlatform && o.Platform != hyperv1.PodPlatform {
		errs = append(errs, fmt.Errorf("--platform %q: want None or Pod", o.Platform))
	}
	if o.LeaderElect {
		if o.LeaderElectResourceName == "" {
			errs = append(errs, errors.New("--leader-elect-resource-name must not be empty"))
		}
		if err := o.Timings.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Run runs the CPO until ctx ends or it loses the Lease. A standby serves
// health and metrics and starts no writing controller. Losing the Lease
// returns an error, which must end the process at once. o must have
// passed Validate, as startup.RunCommand makes sure.
func Run(ctx context.Context, restConfig *rest.Config, o Options) error {
	opts := ctrl.Options{
		Scheme: scheme.New(),
		// The CPO sees only its own namespace, of the HostedControlPlanes in
		// it only its own, and of its Secrets only those it renders; the
		// pull secret is read by name past the cache.
		Cache:                  hostedcontrolplane.CacheOptions(o.Namespace, o.HostedControlPlane),
		Metrics:                o.Metrics.ServerOptions(),
		HealthProbeBindAddress: o.HealthProbeBindAddress,
	}
	if o.Platform == hyperv1.PodPlatform {
		// Of the namespace's Pods, the machines' only.
		opts.Cache.ByObject[&corev1.Pod{}] = podmachine.PodCache
	}
	mgr, elector, err := leaderelection.NewManager(ctx, restConfig, opts, leaderelection.Election{
		Enabled: o.LeaderElect, Namespace: o.Namespace, Name: o.LeaderElectResourceName, Timings: o.Timings,
	}, ctrl.LoggerFrom(ctx))
	if err != nil {
		return err
	}
	// The caches fill from the start, on a standby too (reads only): a
	// replica that comes to lead starts its first pass from them.
	if err := hostedcontrolplane.WarmCache(ctx, mgr.GetCache()); err != nil {
		return err
	}
	identity := elector.Identity()
	log := ctrl.LoggerFrom(ctx)
	fenced := &hostedcontrolplane.FencedWrites{}
	// One provider: both controllers read the same payload, once.
	releases := releaseinfo.NewRegistryProvider(releaseinfo.WithInsecureRegistries(o.InsecureRegistries...))
	reconciler := &hostedcontrolplane.Reconciler{
		Name:                  o.HostedControlPlane,
		Client:                fenced.Client(mgr.GetClient()),
		Fenced:                fenced,
		APIReader:             mgr.GetAPIReader(),
		Releases:              releases,
		OperateOnReleaseImage: o.OperateOnReleaseImage,
		Identity:              identity,
		Recorder:              mgr.GetEventRecorder(hostedcontrolplane.FieldOwner),
	}
	if err := mgr.AddPerTerm(reconciler.SetupWithManager); err != nil {
		return fmt.Errorf("failed to set up the HostedControlPlane controller: %w", err)
	}
	// The hosted cluster's own configuration is written with the hosted
	// cluster's credentials, which the management API server's fence does
	// not see: that it runs only in a term is what keeps a standby out.
	hostedConfig := &hostedclusterconfig.Reconciler{Name: o.HostedControlPlane, Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Releases: releases}
	if err := mgr.AddPerTerm(func(term manager.Manager) error {
		if err := hostedConfig.SetupWithManager(term); err != nil {
			return err
		}
		return term.Add(&hostedclusterconfig.ServingApprover{Namespace: o.Namespace, Client: mgr.GetClient()})
	}); err != nil {
		return fmt.Errorf("failed to set up the hosted cluster configuration controller: %w", err)
	}
	if o.Platform == hyperv1.PodPlatform {
		// The machines are Pods of the management cluster: the fence sees
		// every write.
		machines := &podmachine.Reconciler{Client: fenced.Client(mgr.GetClient()), HostedControlPlane: o.HostedControlPlane, OperateOnReleaseImage: o.OperateOnReleaseImage}
		infrastructure := &podmachine.ClusterReconciler{Client: fenced.Client(mgr.GetClient()), HostedControlPlane: o.HostedControlPlane}
		if err := mgr.AddPerTerm(func(term manager.Manager) error {
			return errors.Join(machines.SetupWithManager(term), infrastructure.SetupWithManager(term))
		}); err != nil {
			return fmt.Errorf("failed to set up the machine controllers: %w", err)
		}
	}
	log.Info("Starting the control-plane-operator", "namespace", o.Namespace, "hostedControlPlane", o.HostedControlPlane, "leaderElect", o.LeaderElect,
		"identity", identity, "lease", o.Namespace+"/"+o.LeaderElectResourceName, "operateOnReleaseImage", o.OperateOnReleaseImage, "platform", o.Platform)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("the control-plane-operator stopped: %w", err)
	}
	return nil
}
