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
	"sigs.k8s.io/yaml"
)

// Leaders is what `get leaders -o json|yaml` prints.
type Leaders struct {
	// HypershiftOperator is the hypershift-operator's own Lease.
	HypershiftOperator LeaseStatus `json:"hypershiftOperator"`
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
	// Valid is true while the Lease has a holder and its renewTime plus
	// leaseDurationSeconds is in the future.
	Valid bool `json:"valid"`
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

// printTable prints the hypershift-operator's Lease, then one row per
// HostedCluster, or empty when there is none.
func printTable(out io.Writer, leaders *Leaders, now time.Time, empty string) error {
	ho := leaders.HypershiftOperator
	w := newTabWriter(out)
	_, _ = fmt.Fprintln(w, "HYPERSHIFT OPERATOR LEASE\tHOLDER\tLEADING FOR\tLAST RENEW\tTRANSITIONS\tVALID")
	_, _ = fmt.Fprintf(w, "%s/%s\t%s\n", ho.Namespace, ho.Name, leaseColumns(ho, now))
	if err := w.Flush(); err != nil {
		return err
	}
	if _, err := fmt.Fprintln(out); err != nil {
		return err
	}
	if len(leaders.Clusters) == 0 {
		_, err := fmt.Fprintln(out, empty)
		return err
	}
	w = newTabWriter(out)
	_, _ = fmt.Fprintln(w, "NAMESPACE\tNAME\tCONTROL PLANE NAMESPACE\tHOLDER\tHOLDER POD\tLEADING FOR\tLAST RENEW\tTRANSITIONS\tVALID")
	for _, c := range leaders.Clusters {
		holder, rest, _ := strings.Cut(leaseColumns(c.Lease, now), "\t")
		_, _ = fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", c.Namespace, c.Name, c.ControlPlaneNamespace, holder, holderPodColumn(c.Lease), rest)
	}
	return w.Flush()
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
// VALID. LEADING FOR is shown only while the Lease is valid: once it has
// expired nobody leads.
func leaseColumns(l LeaseStatus, now time.Time) string {
	holder, leadingFor, lastRenew := none, none, none
	if l.HolderIdentity != "" {
		holder = l.HolderIdentity
	}
	if l.Valid && l.AcquireTime != nil {
		leadingFor = duration.HumanDuration(now.Sub(l.AcquireTime.Time))
	}
	if l.RenewTime != nil {
		lastRenew = duration.HumanDuration(now.Sub(l.RenewTime.Time)) + " ago"
	}
	return fmt.Sprintf("%s\t%s\t%s\t%d\t%s", holder, leadingFor, lastRenew, l.LeaseTransitions, strconv.FormatBool(l.Valid))
}
