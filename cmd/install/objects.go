// Package install implements `hypershift install` and `hypershift install
// render`: the CRDs, their admission policy, and everything the
// hypershift-operator runs with, computed by pure functions and applied with
// server-side apply.
package install

import (
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hypershift-le/hypershift/api/crds"
	"github.com/hypershift-le/hypershift/hypershift-operator/rbac"
	"github.com/hypershift-le/hypershift/hypershift-operator/render"
	"github.com/hypershift-le/hypershift/support/config"
	"github.com/hypershift-le/hypershift/support/metricsserving"
	"github.com/hypershift-le/hypershift/support/operatordeployment"
	"github.com/hypershift-le/hypershift/support/version"
)

const (
	name = rbac.HypershiftOperatorName
	// DefaultImage is the image holding hypershift-operator and control-plane-operator.
	DefaultImage = "quay.io/hypershift-le/hypershift:latest"
)

// Options are what the installed objects depend on.
type Options struct {
	// Namespace is where the hypershift-operator runs.
	Namespace string
	// Image is the hypershift image (the HO, and the CPO's default).
	Image string
	// ImagePullPolicy of the HO's container.
	ImagePullPolicy corev1.PullPolicy
	// Development scales the HO to 0 replicas, for an HO run elsewhere.
	Development bool
	// Replicas of the HO; 2 by default, so that election matters.
	Replicas int32
	// Timings are the HO's timings; ControlPlaneOperatorTimings the
	// timings it renders into every CPO.
	Timings                     config.Timings
	ControlPlaneOperatorTimings config.Timings
	// DisableFencing turns off the API server's check that control-plane-operator
	// writes come from the Lease holder.
	DisableFencing bool
	// TeardownTimeout is the HO's --teardown-timeout; 0 leaves its default.
	TeardownTimeout time.Duration
	// MaxConcurrentReconciles is the HO's --max-concurrent-reconciles; 0
	// leaves its default.
	MaxConcurrentReconciles int
	// Shards is the HO's --shards; 0 or 1 is one shard. Any value but 0
	// rolls the HO out with Recreate.
	Shards int
	// InsecureRegistries are the HO's --insecure-registries.
	InsecureRegistries []string
	// ManagementClusterNetworks and MachineAllowedEndpoints are the HO's
	// --management-cluster-networks and --machine-allowed-endpoints.
	ManagementClusterNetworks, MachineAllowedEndpoints []string
	// LogLevel is the HO's --zap-log-level; "" leaves its default (info).
	LogLevel string
	// LogFormat is the HO's --zap-encoder (json or console); "" leaves its
	// default (json).
	LogFormat string
	// SkipFlowControl leaves out the leader-election FlowSchema and
	// PriorityLevelConfiguration, for clusters whose API Priority and
	// Fairness objects are managed otherwise.
	SkipFlowControl bool
	// EnableMonitoring adds a Prometheus Operator ServiceMonitor for the
	// operator's metrics Service, and runs the operator with
	// --enable-monitoring, which gives every control-plane-operator one.
	EnableMonitoring bool
}

// DefaultOptions are the flags' defaults.
func DefaultOptions() Options {
	return Options{
		Namespace:                   "hypershift",
		Image:                       DefaultImage,
		ImagePullPolicy:             corev1.PullIfNotPresent,
		Replicas:                    2,
		Timings:                     config.DefaultHypershiftOperatorTimings,
		ControlPlaneOperatorTimings: config.DefaultControlPlaneOperatorTimings,
	}
}

// Validate refuses options that would install a broken operator.
func (o Options) Validate() error {
	switch o.ImagePullPolicy {
	case corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	default:
		return fmt.Errorf("invalid --image-pull-policy %q: use Always, IfNotPresent or Never", o.ImagePullPolicy)
	}
	if o.Namespace == "" {
		return fmt.Errorf("--namespace must not be empty")
	}
	if o.Image == "" {
		return fmt.Errorf("--hypershift-image must not be empty")
	}
	if o.Replicas < 0 {
		return fmt.Errorf("--replicas must not be negative, got %d", o.Replicas)
	}
	if o.TeardownTimeout < 0 {
		return fmt.Errorf("--teardown-timeout must not be negative (0 leaves the operator's default), got %s", o.TeardownTimeout)
	}
	if o.MaxConcurrentReconciles != 0 {
		if err := config.ValidateMaxConcurrentReconciles(o.MaxConcurrentReconciles); err != nil {
			return fmt.Errorf("%w (0 leaves the operator's default, %d)", err, config.DefaultMaxConcurrentReconciles)
		}
	}
	if o.Shards != 0 {
		if err := config.ValidateShards(o.Shards); err != nil {
			return fmt.Errorf("%w (0 leaves one)", err)
		}
	}
	if _, err := render.ParseIsolation(o.ManagementClusterNetworks, o.MachineAllowedEndpoints); err != nil {
		return err
	}
	if o.LogLevel != "" && !config.ValidLogLevel(o.LogLevel) {
		return fmt.Errorf("invalid --log-level %q: use debug, info, error or a verbosity from 1 up", o.LogLevel)
	}
	if o.LogFormat != "" && o.LogFormat != "json" && o.LogFormat != "console" {
		return fmt.Errorf("invalid --log-format %q: use json or console", o.LogFormat)
	}
	if err := o.Timings.Validate(); err != nil {
		return fmt.Errorf("invalid hypershift-operator timings: %w", err)
	}
	if err := o.ControlPlaneOperatorTimings.Validate(); err != nil {
		return fmt.Errorf("invalid control-plane-operator timings: %w", err)
	}
	return nil
}

// CRDObjects are the CRDs, cluster-api's the NodePools of platform Pod
// are made of included, and the admission policy that completes them.
func CRDObjects() ([]client.Object, error) {
	list, err := crds.CustomResourceDefinitions()
	if err != nil {
		return nil, err
	}
	capi, err := crds.ClusterAPICustomResourceDefinitions()
	if err != nil {
		return nil, err
	}
	list = append(list, capi...)
	out := make([]client.Object, 0, len(list)+2)
	for _, crd := range list {
		crd.APIVersion, crd.Kind = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
		out = append(out, crd)
	}
	policy, binding := crds.NamespaceLengthPolicy()
	return append(out, policy, binding), nil
}

// VersionLabel carries, on every object install applies, the version of
// the CLI that rendered it: the hypershift-operator's version, which
// `hypershift version` reads back from its Deployment.
const VersionLabel = "app.kubernetes.io/version"

// ResourceObjects are the hypershift-operator's objects, in apply order.
// Their labels are the selector's (app) and the recommended
// app.kubernetes.io ones, which are not in any selector, so that an
// upgrade may change the version.
func ResourceObjects(o Options) []client.Object {
	selector := map[string]string{"app": name}
	labels := map[string]string{
		"app":                          name,
		"app.kubernetes.io/name":       name,
		"app.kubernetes.io/part-of":    "hypershift",
		"app.kubernetes.io/managed-by": "hypershift-cli",
		VersionLabel:                   version.Version,
	}
	meta := func(namespaced bool, objectName string) metav1.ObjectMeta {
		m := metav1.ObjectMeta{Name: objectName, Labels: labels}
		if namespaced {
			m.Namespace = o.Namespace
		}
		return m
	}
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: o.Namespace, Name: name}}
	clusterRole := rbac.ClusterRole()
	clusterRole.Labels = labels
	leaseRole := rbac.LeaderElectionRole(o.Namespace, o.Shards)
	leaseRole.Labels = labels
	// Before the ClusterRole is bound: the operator never holds its
	// ClusterRoleBinding rights unconfined.
	bindingPolicy, bindingPolicyBinding := rbac.ClusterRoleBindingPolicy(rbac.ServiceAccountUser(o.Namespace))
	bindingPolicy.Labels, bindingPolicyBinding.Labels = labels, labels
	objects := []client.Object{
		&corev1.Namespace{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: o.Namespace, Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}},
		},
		&corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}, ObjectMeta: meta(true, name)},
		bindingPolicy,
		bindingPolicyBinding,
		clusterRole,
		&rbacv1.ClusterRoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
			ObjectMeta: meta(false, name),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole.Name},
			Subjects:   subjects,
		},
		leaseRole,
		&rbacv1.RoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
			ObjectMeta: meta(true, leaseRole.Name),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: leaseRole.Name},
			Subjects:   subjects,
		},
	}
	if !o.SkipFlowControl {
		// Before the Deployment, so the operator's first Lease request
		// already has its priority level.
		objects = append(objects, leaderElectionPriorityLevel(labels), leaderElectionFlowSchema(labels))
	}
	metricsReader := rbac.MetricsReaderClusterRole()
	metricsReader.Labels = labels
	clusterAPI := rbac.ClusterAPIRole()
	clusterAPI.Labels = labels
	objects = append(objects,
		metricsReader,
		clusterAPI,
		deployment(o, meta(true, name), selector),
		metricsserving.Service(meta(true, name+"-metrics"), selector),
	)
	if o.EnableMonitoring {
		// It selects the Service by its labels, which hold the selector.
		objects = append(objects, metricsserving.ServiceMonitor(o.Namespace, name, labels, selector))
	}
	return objects
}

func deployment(o Options, meta metav1.ObjectMeta, selector map[string]string) *appsv1.Deployment {
	replicas := o.Replicas
	if o.Development {
		replicas = 0
	}
	args := append(o.ControlPlaneOperatorTimings.Args("cpo-"),
		"--control-plane-operator-image="+o.Image,
		fmt.Sprintf("--enable-fencing=%t", !o.DisableFencing),
	)
	if o.TeardownTimeout > 0 {
		args = append(args, "--teardown-timeout="+o.TeardownTimeout.String())
	}
	if o.MaxConcurrentReconciles > 0 {
		args = append(args, fmt.Sprintf("--max-concurrent-reconciles=%d", o.MaxConcurrentReconciles))
	}
	if o.Shards > 1 {
		args = append(args, fmt.Sprintf("--shards=%d", o.Shards))
	}
	if len(o.InsecureRegistries) > 0 {
		args = append(args, "--insecure-registries="+strings.Join(o.InsecureRegistries, ","))
	}
	if len(o.ManagementClusterNetworks) > 0 {
		args = append(args, "--management-cluster-networks="+strings.Join(o.ManagementClusterNetworks, ","))
	}
	if len(o.MachineAllowedEndpoints) > 0 {
		args = append(args, "--machine-allowed-endpoints="+strings.Join(o.MachineAllowedEndpoints, ","))
	}
	if o.LogLevel != "" {
		args = append(args, "--zap-log-level="+o.LogLevel)
	}
	if o.LogFormat != "" {
		args = append(args, "--zap-encoder="+o.LogFormat)
	}
	if o.EnableMonitoring {
		args = append(args, "--enable-monitoring")
	}
	// Shards are computed from the count every replica runs with: a rolling
	// update that changed it would run two counts side by side, and a
	// HostedCluster could belong to a shard of each. Once --shards is given
	// (1 too: the way back from several), every old replica is gone before
	// a new one starts.
	var strategy appsv1.DeploymentStrategy
	if o.Shards > 0 {
		strategy.Type = appsv1.RecreateDeploymentStrategyType
	}
	return operatordeployment.Render(operatordeployment.Spec{
		Meta:            meta,
		Selector:        selector,
		Replicas:        replicas,
		Strategy:        strategy,
		Image:           o.Image,
		PullPolicy:      o.ImagePullPolicy,
		Binary:          "/usr/bin/hypershift-operator",
		Namespace:       o.Namespace,
		LeaderElect:     true,
		Timings:         o.Timings,
		Args:            args,
		Memory:          "128Mi",
		LivenessDelay:   15,
		SpreadOverNodes: true,
	})
}
