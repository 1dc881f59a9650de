package get

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/client-go/util/jsonpath"
	"sigs.k8s.io/yaml"
)

// Leaders is what `get leaders -o json|yaml` prints.
type Leaders struct {
	// HypershiftOperator is the hypershift-operator's own Lease.
	HypershiftOperator LeaseStatus `json:"hypershiftOperator"`
	// OperatorShards are, when the hypershift-operator runs more than one
	// shard, the Leases of its shards, in order.
	OperatorShards []LeaseStatus `json:"operatorShards,omitempty"`
	// Clusters holds one entry per HostedCluster, sorted by namespace and name.
	Clusters []ClusterLeader `json:"clusters"`
}

// LeaseStatus is a leader-election Lease as of the time it was read.
type LeaseStatus struct {
	Namespace            string       `json:"namespace"`
	Name                 string       `json:"name"`
	HolderIdentity       string       `json:"holderIdentity,omitempty"`
	AcquireTime          *metav1.Time `json:"acquireTime,omitempty"`
	RenewTime            *metav1.Time `json:"renewTime,omitempty"`
	LeaseDurationSeconds int32        `json:"leaseDurationSeconds,omitempty"`
	LeaseTransitions     int32        `json:"leaseTransitions"`
	// Valid is false when the Lease has no holder or the command saw it go
	// its lease duration without a change, true when the command saw it
	// written within its lease duration, and absent (unknown) otherwise: a
	// single listing sees each Lease once. It never compares renewTime,
	// written on the holder's clock, with the command's (see observer).
	Valid *bool `json:"valid,omitempty"`
	// HolderPod is, for a control-plane-operator Lease with a holder, the
	// phase of the holder's pod, or why the holder is gone; empty when not
	// known.
	HolderPod string `json:"holderPod,omitempty"`
	// HolderGone is true when the holder's pod no longer runs it: the
	// hypershift-operator releases such a Lease.
	HolderGone bool `json:"holderGone,omitempty"`
}

// ClusterLeader is a HostedCluster and its control-plane-operator's Lease.
type ClusterLeader struct {
	Namespace             string      `json:"namespace"`
	Name                  string      `json:"name"`
	ControlPlaneNamespace string      `json:"controlPlaneNamespace"`
	Lease                 LeaseStatus `json:"lease"`
	// OperatorShard is, when the hypershift-operator runs more than one
	// shard, the HostedCluster's; OperatorShardHolder, the replica that
	// holds that shard's Lease and reconciles it ("" when none does).
	OperatorShard       *int   `json:"operatorShard,omitempty"`
	OperatorShardHolder string `json:"operatorShardHolder,omitempty"`
}

// none stands for a missing value in the table, as kubectl prints it.
const none = "<none>"

func printJSON(out io.Writer, leaders *Leaders) error {
	raw, err := json.MarshalIndent(leaders, "", "  ")
	if err != nil {
		return fmt.Errorf("failed to render JSON: %w", err)
	}
	_, err = out.Write(append(raw, '\n'))
	return err
}

func printYAML(out io.Writer, leaders *Leaders) error {
	raw, err := yaml.Marshal(leaders)
	if err != nil {
		return fmt.Errorf("failed to render YAML: %w", err)
	}
	_, err = out.Write(raw)
	return err
}

// printNames prints, as kubectl -o name does, pod/NAME for the holder of
// each Lease that has one: the hypershift-operator's first, its shards'
// next, then the HostedClusters' in the order listed, each pod once (a
// hypershift-operator replica holds its Lease and shards alike). As kubectl's -o name, it prints no
// namespace: -o jsonpath gives them.
func printNames(out io.Writer, leaders *Leaders) error {
	leases := append([]LeaseStatus{leaders.HypershiftOperator}, leaders.OperatorShards...)
	for _, c := range leaders.Clusters {
		leases = append(leases, c.Lease)
	}
	var b strings.Builder
	seen := map[string]bool{}
	for _, l := range leases {
		if l.HolderIdentity != "" && !seen[l.Namespace+"/"+l.HolderIdentity] {
			seen[l.Namespace+"/"+l.HolderIdentity] = true
			b.WriteString("pod/" + l.HolderIdentity + "\n")
		}
	}
	_, err := io.WriteString(out, b.String())
	return err
}

// tableOptions are the table's variants: -o wide and --no-headers, and
// sharded, set from what is printed, for the shard columns.
type tableOptions struct {
	wide, noHeaders, sharded bool
}

// wideHeader and wideColumns are what -o wide adds to a Lease's columns.
const wideHeader = "\tACQUIRED\tLEASE DURATION"

func wideColumns(l LeaseStatus) string {
	acquired, leaseDuration := none, none
	if l.AcquireTime != nil {
		acquired = l.AcquireTime.UTC().Format(time.RFC3339)
	}
	if l.LeaseDurationSeconds > 0 {
		leaseDuration = (time.Duration(l.LeaseDurationSeconds) * time.Second).String()
	}
	return "\t" + acquired + "\t" + leaseDuration
}

// printTable prints the hypershift-operator's Lease, then one row per
// HostedCluster, or empty when there is none. Without headers it prints
// the rows alone.
func printTable(out io.Writer, leaders *Leaders, now time.Time, empty string, opts tableOptions) error {
	opts.sharded = len(leaders.OperatorShards) > 0
	w := newTabWriter(out)
	if !opts.noHeaders {
		_, _ = fmt.Fprintln(w, "HYPERSHIFT OPERATOR LEASE\tHOLDER\tLEADING FOR\tLAST RENEW\tTRANSITIONS\tVALID"+opts.wideHeader())
	}
	_, _ = fmt.Fprintln(w, operatorRow(leaders.HypershiftOperator, now, opts))
	for _, shard := range leaders.OperatorShards {
		_, _ = fmt.Fprintln(w, operatorRow(shard, now, opts))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if !opts.noHeaders {
		if _, err := fmt.Fprintln(out); err != nil {
			return err
		}
	}
	if len(leaders.Clusters) == 0 {
		if opts.noHeaders {
			return nil
		}
		_, err := fmt.Fprintln(out, empty)
		return err
	}
	w = newTabWriter(out)
	if !opts.noHeaders {
		_, _ = fmt.Fprintln(w, clusterHeader+opts.shardHeader()+opts.wideHeader())
	}
	for _, c := range leaders.Clusters {
		_, _ = fmt.Fprintln(w, clusterRow(c, now, opts))
	}
	return w.Flush()
}

// clusterHeader heads the HostedClusters' rows.
const clusterHeader = "NAMESPACE\tNAME\tCONTROL PLANE NAMESPACE\tHOLDER\tHOLDER POD\tLEADING FOR\tLAST RENEW\tTRANSITIONS\tVALID"

// operatorRow is the hypershift-operator Lease's row.
func operatorRow(ho LeaseStatus, now time.Time, opts tableOptions) string {
	return fmt.Sprintf("%s/%s\t%s%s", ho.Namespace, ho.Name, leaseColumns(ho, now), opts.wideColumns(ho))
}

func clusterRow(c ClusterLeader, now time.Time, opts tableOptions) string {
	holder, rest, _ := strings.Cut(leaseColumns(c.Lease, now), "\t")
	return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s%s%s", c.Namespace, c.Name, c.ControlPlaneNamespace, holder, holderPodColumn(c.Lease), rest, opts.shardColumns(c), opts.wideColumns(c.Lease))
}

// shardHeader and shardColumns are, when the hypershift-operator runs
// shards, the HostedCluster's shard and the replica holding its Lease.
func (o tableOptions) shardHeader() string {
	if !o.sharded {
		return ""
	}
	return "\tSHARD\tSHARD HOLDER"
}

func (o tableOptions) shardColumns(c ClusterLeader) string {
	if !o.sharded || c.OperatorShard == nil {
		return ""
	}
	holder := none
	if c.OperatorShardHolder != "" {
		holder = c.OperatorShardHolder
	}
	return fmt.Sprintf("\t%d\t%s", *c.OperatorShard, holder)
}

func (o tableOptions) wideHeader() string {
	if !o.wide {
		return ""
	}
	return wideHeader
}

func (o tableOptions) wideColumns(l LeaseStatus) string {
	if !o.wide {
		return ""
	}
	return wideColumns(l)
}

// printChangedRows prints, without headers, the rows of now whose holder,
// validity, transitions or holder pod differ from before, and the
// HostedClusters that are gone, as kubectl's --watch prints changes.
func printChangedRows(out io.Writer, before, after *Leaders, now time.Time, opts tableOptions) error {
	opts.sharded = len(after.OperatorShards) > 0
	w := newTabWriter(out)
	if leaseChanged(before.HypershiftOperator, after.HypershiftOperator) {
		_, _ = fmt.Fprintln(w, operatorRow(after.HypershiftOperator, now, opts))
	}
	for i, shard := range after.OperatorShards {
		if i >= len(before.OperatorShards) || leaseChanged(before.OperatorShards[i], shard) {
			_, _ = fmt.Fprintln(w, operatorRow(shard, now, opts))
		}
	}
	seen := map[string]ClusterLeader{}
	for _, c := range before.Clusters {
		seen[c.Namespace+"/"+c.Name] = c
	}
	for _, c := range after.Clusters {
		key := c.Namespace + "/" + c.Name
		if old, ok := seen[key]; !ok || leaseChanged(old.Lease, c.Lease) || old.OperatorShardHolder != c.OperatorShardHolder {
			_, _ = fmt.Fprintln(w, clusterRow(c, now, opts))
		}
		delete(seen, key)
	}
	for key := range seen {
		_, _ = fmt.Fprintf(w, "%s\t(deleted)\n", key)
	}
	return w.Flush()
}

func leaseChanged(a, b LeaseStatus) bool {
	return a.HolderIdentity != b.HolderIdentity || validColumn(a.Valid) != validColumn(b.Valid) || a.LeaseTransitions != b.LeaseTransitions ||
		a.HolderPod != b.HolderPod || a.HolderGone != b.HolderGone
}

// printJSONPath prints jp over the JSON form of leaders, as kubectl's
// -o jsonpath does over an object's.
func printJSONPath(out io.Writer, leaders *Leaders, jp *jsonpath.JSONPath) error {
	raw, err := json.Marshal(leaders)
	if err != nil {
		return fmt.Errorf("failed to render JSON: %w", err)
	}
	var data any
	if err := json.Unmarshal(raw, &data); err != nil {
		return fmt.Errorf("failed to render JSON: %w", err)
	}
	if err := jp.Execute(out, data); err != nil {
		return fmt.Errorf("failed to print the jsonpath template: %w", err)
	}
	_, err = fmt.Fprintln(out)
	return err
}

// newTabWriter aligns columns the way kubectl does.
func newTabWriter(out io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(out, 6, 4, 3, ' ', 0)
}

// holderGone is what HOLDER POD shows while a Lease still names a gone
// holder, until the hypershift-operator's release lands.
const holderGone = "HOLDER GONE"

// holderPodColumn renders HOLDER POD: the holder's pod phase, HOLDER GONE,
// <none> without a holder, or <unknown> when its pod could not be read.
func holderPodColumn(l LeaseStatus) string {
	switch {
	case l.HolderIdentity == "":
		return none
	case l.HolderGone:
		return holderGone
	case l.HolderPod == "":
		return "<unknown>"
	}
	return l.HolderPod
}

// leaseColumns renders HOLDER, LEADING FOR, LAST RENEW, TRANSITIONS and
// VALID (true, false or unknown). LEADING FOR is shown only while the Lease
// is held and not seen expired: once it has expired nobody leads.
func leaseColumns(l LeaseStatus, now time.Time) string {
	holder, leadingFor, lastRenew := none, none, none
	if l.HolderIdentity != "" {
		holder = l.HolderIdentity
	}
	if l.HolderIdentity != "" && !isFalse(l.Valid) && l.AcquireTime != nil {
		leadingFor = duration.HumanDuration(now.Sub(l.AcquireTime.Time))
	}
	if l.RenewTime != nil {
		lastRenew = duration.HumanDuration(now.Sub(l.RenewTime.Time)) + " ago"
	}
	return fmt.Sprintf("%s\t%s\t%s\t%d\t%s", holder, leadingFor, lastRenew, l.LeaseTransitions, validColumn(l.Valid))
}

// validColumn renders VALID: true, false, or unknown when the command
// cannot tell.
func validColumn(valid *bool) string {
	if valid == nil {
		return "unknown"
	}
	return strconv.FormatBool(*valid)
}

func isFalse(valid *bool) bool {
	return valid != nil && !*valid
}
