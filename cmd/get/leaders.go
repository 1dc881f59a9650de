package get

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/jsonpath"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/cmd/cli"
	"github.com/hypershift-le/hypershift/support/config"
	"github.com/hypershift-le/hypershift/support/holderpod"
	"github.com/hypershift-le/hypershift/support/leaderelection"
	"github.com/hypershift-le/hypershift/support/scheme"
)

// Output formats of `get leaders`; jsonpath takes its template after "=",
// as kubectl's -o jsonpath=... does.
const (
	outputTable    = "table"
	outputWide     = "wide"
	outputJSON     = "json"
	outputYAML     = "yaml"
	outputJSONPath = "jsonpath"
	outputName     = "name"
)

// outputFormats are the -o values, for help and completion.
var outputFormats = []string{outputTable, outputWide, outputName, outputJSON, outputYAML, outputJSONPath + "="}

// defaultHypershiftNamespace is where the hypershift-operator runs unless
// installed elsewhere.
const defaultHypershiftNamespace = "hypershift"

// leadersOptions holds the flags of `get leaders` and what tests inject.
type leadersOptions struct {
	kubeconfig          cli.KubeconfigFlags
	allNamespaces       bool
	namespace           string
	output              string
	noHeaders           bool
	watch               bool
	watchInterval       time.Duration
	hypershiftNamespace string
	// names, when given, are the HostedClusters to show, in the namespace.
	names []string

	// now is the clock the command sees Leases change by.
	now func() time.Time
	// observer judges the Leases by the changes the command sees.
	observer observer
	// out receives the output; nil means the command's standard output.
	out io.Writer
}

// newLeadersCommand returns the `leaders` command, reading the time from now
// and writing to out (the command's standard output when nil).
func newLeadersCommand(now func() time.Time, out io.Writer) *cobra.Command {
	o := &leadersOptions{now: now, out: out}
	cmd := &cobra.Command{
		Use:     "leaders [NAME...]",
		Aliases: []string{"leader"},
		Short:   "Show which pods hold the leader-election Leases",
		Long: `Show which pod holds the Lease of the hypershift-operator and, for each
HostedCluster, the Lease of its control-plane-operator in the control-plane
namespace. VALID is judged as the candidates judge it, by the changes this
command sees on its own clock, never by comparing renewTime (written on the
holder's clock) with yours: a Lease without a holder, or a missing one, is not
valid; with --watch, a Lease seen written is valid until it goes its lease
duration without a change, and then expired (false). A single listing sees
each Lease once and cannot tell a live holder from a silent one: it shows
unknown for a held Lease (and omits "valid" from -o json|yaml). LAST RENEW is
the age of renewTime by your clock, as information.
When the hypershift-operator runs more than one shard (its Lease's
annotation ` + hyperv1.OperatorShardsAnnotation + ` says how many), the shard Leases are
listed under its own, and each HostedCluster shows its SHARD and the SHARD
HOLDER, the replica that reconciles it.
HOLDER POD shows the phase of the control-plane-operator holder's pod, or
HOLDER GONE when that pod no longer runs it (it does not exist, it failed or
succeeded, or it is being deleted and its container terminated): the
hypershift-operator then releases the Lease, and a standby takes it.

NAME... limits the listing to those HostedClusters in the namespace, as
kubectl get takes names: a name that does not exist is an error, and names
cannot be combined with --all-namespaces.`,
		Example: `  # Leaders of the HostedClusters in the clusters namespace
  hypershift get leaders

  # The leader of HostedCluster demo in namespace clusters
  hypershift get leaders demo -n clusters

  # Leaders of every HostedCluster, as JSON
  hypershift get leaders -A -o json

  # The pods that lead, as kubectl -o name prints them
  hypershift get leaders -o name

  # The hypershift-operator runs in another namespace
  hypershift get leaders -n clusters --hypershift-namespace hypershift-system`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, names []string) error {
			o.names = names
			w := o.out
			if w == nil {
				w = cmd.OutOrStdout()
			}
			return o.run(cmd.Context(), w)
		},
	}
	fs := cmd.Flags()
	fs.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "List HostedClusters in all namespaces; overrides --namespace.")
	cli.AddNamespaceFlag(fs, &o.namespace, "Namespace of the HostedClusters")
	fs.StringVarP(&o.output, "output", "o", outputTable, "Output format: table, wide (with acquire times and lease durations), name (the holders, as pod/NAME, one per line), json, yaml or jsonpath=TEMPLATE (kubectl's JSONPath, over the JSON output).")
	fs.BoolVar(&o.noHeaders, "no-headers", false, "With table or wide output, print the rows without the column headers.")
	fs.BoolVarP(&o.watch, "watch", "w", false, "After the first listing, print the rows that change (holder, validity, transitions, holder pod) until interrupted; table and wide output only.")
	fs.DurationVar(&o.watchInterval, "watch-interval", 2*time.Second, "With --watch, how often the Leases are read.")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(outputFormats, cobra.ShellCompDirectiveNoFileComp|cobra.ShellCompDirectiveNoSpace))
	fs.StringVar(&o.hypershiftNamespace, "hypershift-namespace", defaultHypershiftNamespace, "Namespace of the hypershift-operator and its Lease.")
	o.kubeconfig.AddFlags(fs)
	return cmd
}

// run checks the options, reads the Leases and prints them.
func (o *leadersOptions) run(ctx context.Context, out io.Writer) error {
	format, template, _ := strings.Cut(o.output, "=")
	var jp *jsonpath.JSONPath
	switch format {
	case outputTable, outputWide, outputName, outputJSON, outputYAML:
		if template != "" {
			return fmt.Errorf("output format %q takes no template", format)
		}
	case outputJSONPath:
		jp = jsonpath.New("leaders").AllowMissingKeys(true)
		if err := jp.Parse(template); err != nil {
			return fmt.Errorf("invalid jsonpath template %q: %w", template, err)
		}
	default:
		return fmt.Errorf("unsupported output format %q: use table, wide, name, json, yaml or jsonpath=TEMPLATE", o.output)
	}
	if o.allNamespaces && len(o.names) > 0 {
		return errors.New("a HostedCluster cannot be retrieved by name across all namespaces: drop --all-namespaces, and give its namespace with -n")
	}
	if o.watch && format != outputTable && format != outputWide {
		return fmt.Errorf("--watch prints table rows: use it with -o table or -o wide, not %s", format)
	}
	cfg, err := o.kubeconfig.RESTConfig()
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return cli.Explain(cfg.Host, err)
	}
	now := o.now()
	leaders, err := o.gather(ctx, c, now)
	if err != nil {
		return cli.Explain(cfg.Host, err)
	}
	table := tableOptions{wide: format == outputWide, noHeaders: o.noHeaders}
	switch format {
	case outputJSON:
		return printJSON(out, leaders)
	case outputYAML:
		return printYAML(out, leaders)
	case outputJSONPath:
		return printJSONPath(out, leaders, jp)
	case outputName:
		return printNames(out, leaders)
	}
	if err := printTable(out, leaders, now, o.emptyMessage(), table); err != nil {
		return err
	}
	if !o.watch {
		return nil
	}
	return o.watchRows(ctx, c, out, leaders, table, cfg.Host)
}

// watchRows reads the Leases every watch interval and prints, without
// headers, each row whose holder, validity, transitions or holder pod
// changed, until ctx ends (Ctrl-C).
func (o *leadersOptions) watchRows(ctx context.Context, c client.Client, out io.Writer, last *Leaders, table tableOptions, host string) error {
	ticker := time.NewTicker(o.watchInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ticker.C:
		}
		now := o.now()
		leaders, err := o.gather(ctx, c, now)
		if err != nil {
			return cli.Explain(host, err)
		}
		if err := printChangedRows(out, last, leaders, now, table); err != nil {
			return err
		}
		last = leaders
	}
}

// gather lists the HostedClusters in scope (or gets the named ones) and
// reads the hypershift-operator's Lease and, for every HostedCluster, sorted
// by namespace and name, its control-plane-operator's Lease, judging each
// Lease as seen at now.
func (o *leadersOptions) gather(ctx context.Context, c client.Client, now time.Time) (*Leaders, error) {
	list, err := o.hostedClusters(ctx, c)
	if err != nil {
		return nil, err
	}
	leaders := &Leaders{Clusters: []ClusterLeader{}}
	var annotations map[string]string
	leaders.HypershiftOperator, annotations, err = o.readLease(ctx, c, o.hypershiftNamespace, hyperv1.HypershiftOperatorLeaseName, now)
	if err != nil {
		return nil, err
	}
	shards, err := operatorShards(annotations)
	if err != nil {
		return nil, err
	}
	// With one shard, the HostedClusters are its Lease holder's.
	for shard := 0; shards > 1 && shard < shards; shard++ {
		lease, _, err := o.readLease(ctx, c, o.hypershiftNamespace, leaderelection.ShardLeaseName(hyperv1.HypershiftOperatorLeaseName, shard), now)
		if err != nil {
			return nil, err
		}
		leaders.OperatorShards = append(leaders.OperatorShards, lease)
	}
	slices.SortFunc(list, func(a, b hyperv1.HostedCluster) int {
		if n := strings.Compare(a.Namespace, b.Namespace); n != 0 {
			return n
		}
		return strings.Compare(a.Name, b.Name)
	})
	for _, hc := range list {
		cpNamespace := hyperv1.ControlPlaneNamespace(hc.Namespace, hc.Name)
		lease, _, err := o.readLease(ctx, c, cpNamespace, hyperv1.ControlPlaneOperatorLeaseName, now)
		if err != nil {
			return nil, err
		}
		if err := judgeHolder(ctx, c, &lease); err != nil {
			return nil, err
		}
		cluster := ClusterLeader{
			Namespace:             hc.Namespace,
			Name:                  hc.Name,
			ControlPlaneNamespace: cpNamespace,
			Lease:                 lease,
		}
		if shards > 1 {
			shard := leaderelection.ShardOf(hyperv1.HostedClusterShardKey(hc.Namespace, hc.Name), shards)
			cluster.OperatorShard = ptr.To(shard)
			cluster.OperatorShardHolder = leaders.OperatorShards[shard].HolderIdentity
		}
		leaders.Clusters = append(leaders.Clusters, cluster)
	}
	return leaders, nil
}

// hostedClusters lists the HostedClusters in scope or, with names, gets
// each named one in the namespace, as kubectl get does: every missing name
// is reported, as the API server reports it (NotFound).
func (o *leadersOptions) hostedClusters(ctx context.Context, c client.Client) ([]hyperv1.HostedCluster, error) {
	if len(o.names) == 0 {
		list := &hyperv1.HostedClusterList{}
		var opts []client.ListOption
		scope := "in all namespaces"
		if !o.allNamespaces {
			opts = append(opts, client.InNamespace(o.namespace))
			scope = "in namespace " + o.namespace
		}
		if err := c.List(ctx, list, opts...); err != nil {
			return nil, fmt.Errorf("failed to list HostedClusters %s: %w", scope, err)
		}
		return list.Items, nil
	}
	var found []hyperv1.HostedCluster
	var missing []error
	seen := map[string]bool{}
	for _, name := range o.names {
		if seen[name] {
			continue
		}
		seen[name] = true
		hc := &hyperv1.HostedCluster{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: o.namespace, Name: name}, hc); err != nil {
			if apierrors.IsNotFound(err) {
				missing = append(missing, fmt.Errorf("%w in namespace %s", err, o.namespace))
				continue
			}
			return nil, fmt.Errorf("failed to get HostedCluster %s/%s: %w", o.namespace, name, err)
		}
		found = append(found, *hc)
	}
	if len(missing) > 0 {
		// One line, each missing name as the API server reports it.
		format := strings.TrimSuffix(strings.Repeat("%w; ", len(missing)), "; ")
		args := make([]any, len(missing))
		for i, err := range missing {
			args[i] = err
		}
		return nil, fmt.Errorf(format, args...)
	}
	return found, nil
}

// emptyMessage is what the table shows when no HostedCluster is in scope.
func (o *leadersOptions) emptyMessage() string {
	if o.allNamespaces {
		return "No HostedClusters found."
	}
	return fmt.Sprintf("No HostedClusters found in namespace %s.", o.namespace)
}

// operatorShards reads the hypershift-operator's shard count from its
// Lease's annotations: 1 when they do not say (a version before shards).
func operatorShards(annotations map[string]string) (int, error) {
	value, ok := annotations[hyperv1.OperatorShardsAnnotation]
	if !ok {
		return 1, nil
	}
	n, err := strconv.Atoi(value)
	if err != nil || config.ValidateShards(n) != nil {
		return 0, fmt.Errorf("the hypershift-operator's Lease says it runs %q shards (annotation %s): not a count from 1 to %d", value, hyperv1.OperatorShardsAnnotation, config.MaxShards)
	}
	return n, nil
}

// readLease reads the Lease namespace/name and judges it as seen at now; a
// missing Lease has no holder and is not valid. It also returns the
// Lease's annotations.
func (o *leadersOptions) readLease(ctx context.Context, c client.Client, namespace, name string, now time.Time) (LeaseStatus, map[string]string, error) {
	status := LeaseStatus{Namespace: namespace, Name: name, Valid: ptr.To(false)}
	lease := &coordinationv1.Lease{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, lease); err != nil {
		if apierrors.IsNotFound(err) {
			o.observer.forget(namespace, name)
			return status, nil, nil
		}
		return status, nil, fmt.Errorf("failed to read Lease %s/%s: %w", namespace, name, err)
	}
	spec := lease.Spec
	if spec.HolderIdentity != nil {
		status.HolderIdentity = *spec.HolderIdentity
	}
	if spec.LeaseDurationSeconds != nil {
		status.LeaseDurationSeconds = *spec.LeaseDurationSeconds
	}
	if spec.LeaseTransitions != nil {
		status.LeaseTransitions = *spec.LeaseTransitions
	}
	status.AcquireTime = toTime(spec.AcquireTime)
	status.RenewTime = toTime(spec.RenewTime)
	status.Valid = o.observer.judge(lease, now)
	return status, lease.Annotations, nil
}

// judgeHolder records whether the pod a control-plane-operator Lease names
// as its holder still runs it (holderpod.Judge, the rule by which the
// hypershift-operator releases the Lease of a gone holder). A user who may
// not read pods sees the holder's pod as unknown.
func judgeHolder(ctx context.Context, c client.Client, lease *LeaseStatus) error {
	if lease.HolderIdentity == "" {
		return nil
	}
	pod := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: lease.Namespace, Name: lease.HolderIdentity}, pod); err != nil {
		switch {
		case apierrors.IsNotFound(err):
			pod = nil
		case apierrors.IsForbidden(err):
			return nil
		default:
			return fmt.Errorf("failed to read pod %s/%s, the holder of Lease %s: %w", lease.Namespace, lease.HolderIdentity, lease.Name, err)
		}
	}
	verdict := holderpod.Judge(pod, hyperv1.ControlPlaneOperatorName)
	lease.HolderGone, lease.HolderPod = verdict.Gone, verdict.Reason
	return nil
}

// toTime converts a Lease's MicroTime to a Time truncated to the second, so
// the output does not change with sub-second noise.
func toTime(t *metav1.MicroTime) *metav1.Time {
	if t == nil {
		return nil
	}
	converted := metav1.NewTime(t.Truncate(time.Second))
	return &converted
}
