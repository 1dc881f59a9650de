package install

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hypershift-le/hypershift/cmd/cli"
	"github.com/hypershift-le/hypershift/hypershift-operator/rbac"
	"github.com/hypershift-le/hypershift/support/apply"
	"github.com/hypershift-le/hypershift/support/config"
	"github.com/hypershift-le/hypershift/support/metricsserving"
)

// installFlags are the flags of `hypershift install`.
type installFlags struct {
	Options
	kube               cli.KubeconfigFlags
	imagePullPolicy    string
	waitUntilAvailable bool
	timeout            time.Duration
	dryRun             bool
	enableFencing      bool
}

func (f *installFlags) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.Namespace, "namespace", f.Namespace, "The namespace to install the hypershift-operator into.")
	fs.StringVar(&f.Image, "hypershift-image", f.Image, "The image of the hypershift-operator, also the control-plane-operator's default.")
	fs.StringVar(&f.imagePullPolicy, "image-pull-policy", string(f.ImagePullPolicy), "The operator's image pull policy: Always, IfNotPresent or Never.")
	fs.BoolVar(&f.Development, "development", f.Development, "Install with 0 operator replicas, for an operator that runs elsewhere (e.g. on your machine).")
	fs.Int32Var(&f.Replicas, "replicas", f.Replicas, "Operator replicas; more than one makes leader election matter.")
	f.Timings.AddFlags(fs, "", "hypershift-operator")
	f.ControlPlaneOperatorTimings.AddFlags(fs, "cpo-", "control-plane-operator")
	fs.BoolVar(&f.enableFencing, "enable-fencing", true, "Have the API server refuse writes by control-plane-operator pods that do not hold their Lease, and by hypershift-operator pods that do not hold the Lease of the HostedCluster's shard (the operator's own with one shard).")
	fs.DurationVar(&f.TeardownTimeout, "teardown-timeout", 0, "The operator's --teardown-timeout: how long it waits for a control-plane-operator to finalize its HostedControlPlane (0: the operator's default, 2m).")
	fs.IntVar(&f.MaxConcurrentReconciles, "max-concurrent-reconciles", 0, fmt.Sprintf("The operator's --max-concurrent-reconciles: how many HostedClusters it reconciles at once, up to %d (0: the operator's default, %d).", config.MaxMaxConcurrentReconciles, config.DefaultMaxConcurrentReconciles))
	fs.IntVar(&f.Shards, "shards", 0, fmt.Sprintf("The operator's --shards: how many shards, each with a Lease of its own, split the HostedClusters between the replicas, up to %d (0 or 1: one, every HostedCluster reconciled by the holder of the operator's Lease). Once given, the operator rolls out with Recreate, as replicas with different counts must not run side by side: to go back from several shards, give 1, not 0.", config.MaxShards))
	fs.StringSliceVar(&f.InsecureRegistries, "insecure-registries", nil, "The operator's --insecure-registries: registry hosts it reaches over plain HTTP.")
	fs.StringSliceVar(&f.ManagementClusterNetworks, "management-cluster-networks", nil, "The operator's --management-cluster-networks: CIDRs holding every address of the management cluster (nodes, pods, Services, API server, etcd), which the machines of platform Pod and the hosted kube-apiservers' webhook calls may not reach (NetworkPolicies per control-plane namespace; the pod network must enforce them). Empty: no isolation.")
	fs.StringSliceVar(&f.MachineAllowedEndpoints, "machine-allowed-endpoints", nil, "The operator's --machine-allowed-endpoints: IP:port addresses inside --management-cluster-networks that machines may reach all the same (an image registry; the hosted API endpoint when it is published under a DNS name).")
	fs.StringVar(&f.LogLevel, "log-level", "", "The operator's log level (--zap-log-level): debug, info, error or a verbosity from 1 up (default info).")
	fs.StringVar(&f.LogFormat, "log-format", "", "The operator's log format (--zap-encoder): json or console (default json).")
	fs.BoolVar(&f.EnableMonitoring, "enable-monitoring", false, "Add a Prometheus Operator ServiceMonitor that scrapes the operator's metrics over HTTPS with Prometheus's ServiceAccount token (bind the "+rbac.MetricsReaderName+" ClusterRole to it), and run the operator with --enable-monitoring, which gives every control-plane-operator a metrics Service and a ServiceMonitor of its own; needs the ServiceMonitor CRD.")
	fs.BoolVar(&f.SkipFlowControl, "skip-flow-control", false, "Leave out the hypershift-leader-election FlowSchema and PriorityLevelConfiguration, for a cluster whose API Priority and Fairness objects are managed otherwise.")
}

func (f *installFlags) complete() error {
	f.ImagePullPolicy = corev1.PullPolicy(f.imagePullPolicy)
	f.DisableFencing = !f.enableFencing
	return f.Validate()
}

// NewCommand returns `hypershift install` with its `render` subcommand.
func NewCommand() *cobra.Command {
	f := &installFlags{Options: DefaultOptions()}
	cmd := &cobra.Command{
		Use:   "install",
		Short: "Install the CRDs and the hypershift-operator into a cluster",
		Long: `Install applies, with server-side apply as hypershift-cli, the HostedCluster and
HostedControlPlane CRDs (and waits until they are established), their admission
policy, the hypershift-operator's namespace, ServiceAccount, the admission policy
that lets it write only the control-plane-operators' ClusterRoleBindings, its
ClusterRole and binding, its leader-election Role and binding, an API Priority and Fairness FlowSchema and
PriorityLevelConfiguration (hypershift-leader-election) that keep ServiceAccounts'
Lease renewals apart from other traffic, its Deployment and a metrics Service.
Running it again changes nothing.`,
		Example: `  # Install into the cluster of the current kubeconfig context
  hypershift install

  # See what would change, without persisting anything
  hypershift install --dry-run

  # Install and wait for the operator to be available
  hypershift install --hypershift-image=quay.io/example/hypershift:v0.1.0 --wait-until-available`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.complete(); err != nil {
				return err
			}
			return f.run(cmd.Context(), cmd.OutOrStdout())
		},
	}
	fs := cmd.Flags()
	f.addFlags(fs)
	f.kube.AddFlags(fs)
	fs.BoolVar(&f.waitUntilAvailable, "wait-until-available", false, "Wait until the operator's Deployment is available.")
	fs.DurationVar(&f.timeout, "timeout", 5*time.Minute, "How long to wait for the CRDs and, with --wait-until-available, the operator.")
	fs.BoolVar(&f.dryRun, "dry-run", false, "Send every object as a server-side dry run: validated by the API server, nothing persisted.")
	cmd.AddCommand(newRenderCommand())
	return cmd
}

func (f *installFlags) run(ctx context.Context, out io.Writer) error {
	c, cfg, err := f.kube.Connect()
	if err != nil {
		return err
	}
	if f.EnableMonitoring {
		// Before anything is applied: an install that cannot finish leaves
		// nothing half done.
		if _, err := c.RESTMapper().RESTMapping(metricsserving.ServiceMonitorKind.GroupKind(), metricsserving.ServiceMonitorKind.Version); err != nil {
			if meta.IsNoMatchError(err) {
				return fmt.Errorf("--enable-monitoring needs the Prometheus Operator's ServiceMonitor CRD (%s), which this cluster does not have: install the Prometheus Operator first, or leave the flag out", metricsserving.ServiceMonitorKind.GroupVersion())
			}
			return cli.Explain(cfg.Host, fmt.Errorf("failed to look up the ServiceMonitor kind: %w", err))
		}
	}
	crdObjects, err := CRDObjects()
	if err != nil {
		return err
	}
	applier := apply.Applier{Client: c, FieldOwner: cli.FieldOwner, DryRun: f.dryRun}
	suffix := ""
	if f.dryRun {
		suffix = " (server dry run)"
	}
	apply := func(objects []client.Object) error {
		for _, obj := range objects {
			changed, err := applier.Apply(ctx, obj)
			if f.dryRun && obj.GetNamespace() != "" && apierrors.IsNotFound(err) && namespaceMissing(ctx, c, obj.GetNamespace()) {
				// A dry run persists nothing, so the namespace it would
				// create is not there for what goes into it.
				_, _ = fmt.Fprintf(out, "%s %s not checked: namespace %s does not exist yet%s\n", kindOf(obj), describe(obj), obj.GetNamespace(), suffix)
				continue
			}
			if err != nil {
				return cli.Explain(cfg.Host, err)
			}
			state := "unchanged"
			if changed {
				state = "applied"
			}
			_, _ = fmt.Fprintf(out, "%s %s %s%s\n", kindOf(obj), describe(obj), state, suffix)
		}
		return nil
	}
	if err := apply(crdObjects); err != nil {
		return err
	}
	if !f.dryRun {
		if err := waitForCRDs(ctx, c, crdObjects, f.timeout, out); err != nil {
			return cli.Explain(cfg.Host, err)
		}
	}
	if err := apply(ResourceObjects(f.Options)); err != nil {
		return err
	}
	if f.waitUntilAvailable && !f.dryRun {
		return cli.Explain(cfg.Host, waitForOperator(ctx, c, f.Namespace, f.timeout, out))
	}
	return nil
}

// waitForCRDs waits until every CRD is Established.
func waitForCRDs(ctx context.Context, c client.Client, objects []client.Object, timeout time.Duration, out io.Writer) error {
	for _, obj := range objects {
		crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
		if !ok {
			continue
		}
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
			live := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(crd), live); err != nil {
				return false, err
			}
			for _, cond := range live.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("CustomResourceDefinition %s was not established within %s: %w", crd.Name, timeout, err)
		}
		_, _ = fmt.Fprintf(out, "CustomResourceDefinition %s established\n", crd.Name)
	}
	return nil
}

// waitForOperator waits until the operator's Deployment has every replica
// available, printing progress whenever it changes.
func waitForOperator(ctx context.Context, c client.Client, namespace string, timeout time.Duration, out io.Writer) error {
	key := client.ObjectKey{Namespace: namespace, Name: name}
	last := ""
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		d := &appsv1.Deployment{}
		if err := c.Get(ctx, key, d); err != nil {
			return false, err
		}
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		progress := fmt.Sprintf("Waiting for deployment %s: %d of %d replicas available", key, d.Status.AvailableReplicas, want)
		if progress != last {
			_, _ = fmt.Fprintln(out, progress)
			last = progress
		}
		return d.Status.ObservedGeneration >= d.Generation && d.Status.AvailableReplicas >= want && d.Status.UpdatedReplicas >= want, nil
	})
	if err != nil {
		return fmt.Errorf("the hypershift-operator was not available within %s (last: %s): %w", timeout, last, err)
	}
	_, _ = fmt.Fprintf(out, "The hypershift-operator is available\n")
	return nil
}

func namespaceMissing(ctx context.Context, c client.Client, namespace string) bool {
	return apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Name: namespace}, &corev1.Namespace{}))
}

func kindOf(obj client.Object) string { return obj.GetObjectKind().GroupVersionKind().Kind }

func describe(obj client.Object) string {
	if obj.GetNamespace() == "" {
		return obj.GetName()
	}
	return obj.GetNamespace() + "/" + obj.GetName()
}
