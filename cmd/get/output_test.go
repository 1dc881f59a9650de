package get

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestObserverJudge checks the rule `get leaders` judges VALID by: the
// changes the command sees on its own clock, never renewTime (here always
// on a clock an hour off, behind or ahead).
func TestObserverJudge(t *testing.T) {
	type step struct {
		after time.Duration // since the first sighting
		rv    string
		want  string // true, false or unknown
	}
	held := func(holder string, renewedFromNow time.Duration, seconds *int32) coordinationv1.LeaseSpec {
		return coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder), RenewTime: ptr.To(metav1.NewMicroTime(fixedNow.Add(renewedFromNow))), LeaseDurationSeconds: seconds}
	}
	for _, tc := range []struct {
		name  string
		spec  coordinationv1.LeaseSpec
		steps []step
	}{
		{name: "when the Lease has no holder, it is not valid", spec: held("", 0, ptr.To[int32](15)), steps: []step{{0, "1", "false"}}},
		{name: "when the Lease has no holder identity at all, it is not valid", spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr.To[int32](15)}, steps: []step{{0, "1", "false"}}},
		{name: "when the Lease declares no duration, it is not valid", spec: held("a", 0, nil), steps: []step{{0, "1", "false"}}},
		{name: "when a Lease is seen once, its validity is unknown, although renewTime plus its duration passed an hour ago", spec: held("a", -time.Hour, ptr.To[int32](15)), steps: []step{{0, "1", "unknown"}}},
		{name: "when a Lease stays unchanged for its duration, it has expired, although renewTime plus its duration lies an hour ahead", spec: held("a", time.Hour, ptr.To[int32](15)), steps: []step{
			{0, "1", "unknown"}, {14 * time.Second, "1", "unknown"}, {15 * time.Second, "1", "false"},
		}},
		{name: "when a Lease is seen written, it is valid until it goes its duration without a change, although renewTime is an hour old", spec: held("a", -time.Hour, ptr.To[int32](15)), steps: []step{
			{0, "1", "unknown"}, {5 * time.Second, "2", "true"}, {19 * time.Second, "2", "true"}, {20 * time.Second, "2", "false"}, {21 * time.Second, "3", "true"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var o observer
			for _, st := range tc.steps {
				lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "lease", ResourceVersion: st.rv}, Spec: tc.spec}
				if got := validColumn(o.judge(lease, fixedNow.Add(st.after))); got != st.want {
					t.Errorf("after %s at resourceVersion %s: valid %s, want %s", st.after, st.rv, got, st.want)
				}
			}
		})
	}
}

func TestTableWithoutClusters(t *testing.T) {
	for _, tc := range []struct {
		opts leadersOptions
		want string
	}{
		{opts: leadersOptions{allNamespaces: true, namespace: "clusters"}, want: "No HostedClusters found.\n"},
		{opts: leadersOptions{namespace: "clusters"}, want: "No HostedClusters found in namespace clusters.\n"},
	} {
		var out bytes.Buffer
		leaders := &Leaders{HypershiftOperator: LeaseStatus{Namespace: "hypershift", Name: "lease"}}
		if err := printTable(&out, leaders, fixedNow, tc.opts.emptyMessage(), tableOptions{}); err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(out.String(), "\n\n"+tc.want) {
			t.Errorf("want the table to end with a blank line and %q, got:\n%s", tc.want, out.String())
		}
	}
}

func TestHelpHasExamples(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"leaders", "--help"}} {
		out, err := runGet(t, args...)
		if err != nil {
			t.Fatalf("get %s failed: %v", strings.Join(args, " "), err)
		}
		if !strings.Contains(out, "Examples:") || !strings.Contains(out, "hypershift get leaders") {
			t.Errorf("get %s shows no example:\n%s", strings.Join(args, " "), out)
		}
	}
	out, _ := runGet(t, "leaders", "--help")
	for _, flag := range []string{"-A, --all-namespaces", "-n, --namespace", "-o, --output", "--hypershift-namespace", "--kubeconfig", "--context", "--request-timeout"} {
		if !strings.Contains(out, flag) {
			t.Errorf("leaders --help does not list %s", flag)
		}
	}
}

// TestWatchPrintsAMovedShard: with --watch, when a shard moves to another
// replica, its Lease's row and the rows of its HostedClusters print; the
// other shard's and its cluster's do not.
func TestWatchPrintsAMovedShard(t *testing.T) {
	shard := func(i int, holder string) LeaseStatus {
		return LeaseStatus{Namespace: "hypershift", Name: fmt.Sprintf("hypershift-operator-leader-elect-shard-%d", i), HolderIdentity: holder, Valid: ptr.To(true)}
	}
	cluster := func(name string, i int, holder string) ClusterLeader {
		return ClusterLeader{Namespace: "clusters", Name: name, ControlPlaneNamespace: "clusters-" + name, OperatorShard: ptr.To(i), OperatorShardHolder: holder,
			Lease: LeaseStatus{Namespace: "clusters-" + name, Name: "control-plane-operator-leader-elect", HolderIdentity: "cpo-" + name, Valid: ptr.To(true)}}
	}
	ho := LeaseStatus{Namespace: "hypershift", Name: "hypershift-operator-leader-elect", HolderIdentity: "ho-a", Valid: ptr.To(true)}
	before := &Leaders{HypershiftOperator: ho, OperatorShards: []LeaseStatus{shard(0, "ho-a"), shard(1, "ho-b")},
		Clusters: []ClusterLeader{cluster("one", 0, "ho-a"), cluster("two", 1, "ho-b")}}
	after := &Leaders{HypershiftOperator: ho, OperatorShards: []LeaseStatus{shard(0, "ho-a"), shard(1, "ho-a")},
		Clusters: []ClusterLeader{cluster("one", 0, "ho-a"), cluster("two", 1, "ho-a")}}
	var out bytes.Buffer
	if err := printChangedRows(&out, before, after, fixedNow, tableOptions{}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var shardRow, clusterRow []string
	if len(lines) == 2 {
		shardRow, clusterRow = strings.Fields(lines[0]), strings.Fields(lines[1])
	}
	if len(shardRow) < 2 || shardRow[0] != "hypershift/hypershift-operator-leader-elect-shard-1" || shardRow[1] != "ho-a" ||
		len(clusterRow) < 4 || clusterRow[1] != "two" || strings.Join(clusterRow[len(clusterRow)-2:], " ") != "1 ho-a" {
		t.Fatalf("printed:\n%s\nwant the row of shard 1, then the row of cluster two with shard 1 and its new holder", out.String())
	}
}
