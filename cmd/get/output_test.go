package get

import (
	"bytes"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestLeaseValid(t *testing.T) {
	renewed := func(ago time.Duration) *metav1.MicroTime { return ptr.To(metav1.NewMicroTime(fixedNow.Add(-ago))) }
	for _, tc := range []struct {
		name string
		spec coordinationv1.LeaseSpec
		want bool
	}{
		{name: "renewed within its duration", spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("a"), RenewTime: renewed(5 * time.Second), LeaseDurationSeconds: ptr.To[int32](15)}, want: true},
		{name: "expired", spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("a"), RenewTime: renewed(time.Hour), LeaseDurationSeconds: ptr.To[int32](15)}, want: false},
		{name: "expires exactly now", spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("a"), RenewTime: renewed(15 * time.Second), LeaseDurationSeconds: ptr.To[int32](15)}, want: false},
		{name: "released", spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(""), RenewTime: renewed(time.Second), LeaseDurationSeconds: ptr.To[int32](15)}, want: false},
		{name: "no holder", spec: coordinationv1.LeaseSpec{RenewTime: renewed(time.Second), LeaseDurationSeconds: ptr.To[int32](15)}, want: false},
		{name: "never renewed", spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("a"), LeaseDurationSeconds: ptr.To[int32](15)}, want: false},
		{name: "no duration", spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("a"), RenewTime: renewed(time.Second)}, want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := leaseValid(tc.spec, fixedNow); got != tc.want {
				t.Errorf("leaseValid = %t, want %t", got, tc.want)
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
