package install

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hypershift-le/hypershift/hypershift-operator/rbac"
	"github.com/hypershift-le/hypershift/support/testutil"
)

// compareText compares out with testdata/name; UPDATE=true rewrites it.
func compareText(t *testing.T, name string, out []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if strings.EqualFold(os.Getenv(testutil.UpdateEnv), "true") {
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("failed to read golden file (run with UPDATE=true to create it): %v", err)
	}
	if diff := cmp.Diff(string(want), string(out)); diff != "" {
		t.Errorf("%s differs (-golden +got):\n%s", path, diff)
	}
}

func TestRenderGolden(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{name: "all.yaml", args: []string{"--hypershift-image=quay.io/example/hypershift:v0.1.0"}},
		{name: "all.json", args: []string{"--hypershift-image=quay.io/example/hypershift:v0.1.0", "--format=json"}},
		{name: "resources-development.yaml", args: []string{"--outputs=resources", "--development", "--namespace=hypershift-dev", "--image-pull-policy=Always"}},
		{name: "resources-monitoring.yaml", args: []string{"--outputs=resources", "--hypershift-image=quay.io/example/hypershift:v0.1.0", "--enable-monitoring"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := newRenderCommand()
			var out bytes.Buffer
			cmd.SetOut(&out)
			cmd.SetArgs(tt.args)
			if err := cmd.Execute(); err != nil {
				t.Fatal(err)
			}
			compareText(t, tt.name, out.Bytes())
		})
	}
}

func TestRenderToFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "install.yaml")
	cmd := newRenderCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--hypershift-image=quay.io/example/hypershift:v0.1.0", "--output-file=" + path})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if out.Len() != 0 {
		t.Errorf("with --output-file, nothing goes to stdout; got %d bytes", out.Len())
	}
	written, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	compareText(t, "all.yaml", written)
}

func TestRenderRefusesBadFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "when the format is unknown, it is refused", args: []string{"--format=xml"}, want: `unsupported --format "xml": use yaml or json`},
		{name: "when the outputs are unknown, it is refused", args: []string{"--outputs=everything"}, want: `unsupported --outputs "everything": use crds, resources or all`},
		{name: "when the pull policy is unknown, it is refused", args: []string{"--image-pull-policy=Sometimes"}, want: `invalid --image-pull-policy "Sometimes"`},
		{name: "when the CPO timings are invalid, it is refused", args: []string{"--cpo-leader-elect-renew-deadline=2m"}, want: "invalid control-plane-operator timings"},
		{name: "when the log level is unknown, it is refused", args: []string{"--log-level=loud"}, want: `invalid --log-level "loud": use debug, info, error or a verbosity from 1 up`},
		{name: "when the log format is unknown, it is refused", args: []string{"--log-format=text"}, want: `invalid --log-format "text": use json or console`},
		{name: "when the teardown timeout is negative, it is refused", args: []string{"--teardown-timeout=-1s"}, want: "--teardown-timeout must not be negative"},
		{name: "when the worker count is negative, it is refused", args: []string{"--max-concurrent-reconciles=-1"}, want: "--max-concurrent-reconciles must be from 1 to 1000, got -1 (0 leaves the operator's default, 25)"},
		{name: "when the worker count is too large, it is refused", args: []string{"--max-concurrent-reconciles=1001"}, want: "--max-concurrent-reconciles must be from 1 to 1000, got 1001"},
		{name: "when the shard count is too large, it is refused", args: []string{"--shards=65"}, want: "--shards must be from 1 to 64, got 65 (0 leaves one)"},
		{name: "when a management network is no CIDR, it is refused", args: []string{"--management-cluster-networks=10.0.0.0"}, want: `--management-cluster-networks: "10.0.0.0" is not an IPv4 CIDR such as 10.128.0.0/14`},
		{name: "when machine endpoints come without management networks, they are refused", args: []string{"--machine-allowed-endpoints=10.0.0.5:5000"}, want: "--machine-allowed-endpoints needs --management-cluster-networks"},
		{name: "when a machine endpoint has no port, it is refused", args: []string{"--management-cluster-networks=10.0.0.0/8", "--machine-allowed-endpoints=10.0.0.5"}, want: `--machine-allowed-endpoints: "10.0.0.5" is not an IPv4 address and port`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := newRenderCommand()
			cmd.SetOut(&bytes.Buffer{})
			cmd.SetErr(&bytes.Buffer{})
			cmd.SetArgs(tt.args)
			err := cmd.Execute()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestOperatorDeployment(t *testing.T) {
	o := DefaultOptions()
	d := deploymentOf(ResourceObjects(o))
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	results := evaluator.EvaluatePod(psaapi.LevelVersion{Level: psaapi.LevelRestricted, Version: psaapi.LatestVersion()}, &d.Spec.Template.ObjectMeta, &d.Spec.Template.Spec)
	if agg := policy.AggregateCheckResults(results); !agg.Allowed {
		t.Fatalf("the operator pod violates Pod Security restricted: %s", agg.ForbiddenDetail())
	}
	if *d.Spec.Replicas != 2 {
		t.Errorf("replicas = %d, want 2 so that election matters", *d.Spec.Replicas)
	}
	o.Development = true
	if d := deploymentOf(ResourceObjects(o)); *d.Spec.Replicas != 0 {
		t.Errorf("with --development, replicas = %d, want 0", *d.Spec.Replicas)
	}
}

// TestOperatorFlags: the operator's own flags that install takes are
// rendered into its arguments, and only when set.
func TestOperatorFlags(t *testing.T) {
	cmd := newRenderCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--outputs=resources", "--teardown-timeout=5m", "--insecure-registries=registry.local:5000,10.0.0.1:5000", "--log-level=debug", "--log-format=console", "--skip-flow-control", "--enable-monitoring", "--max-concurrent-reconciles=25",
		"--management-cluster-networks=10.0.0.0/8,192.168.1.0/24", "--machine-allowed-endpoints=10.0.0.5:5000"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--teardown-timeout=5m0s", "--insecure-registries=registry.local:5000,10.0.0.1:5000", "--zap-log-level=debug", "--zap-encoder=console", "- --enable-monitoring\n", "--max-concurrent-reconciles=25",
		"--management-cluster-networks=10.0.0.0/8,192.168.1.0/24", "--machine-allowed-endpoints=10.0.0.5:5000"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the render lacks %q", want)
		}
	}
	for _, kind := range []string{"kind: FlowSchema", "kind: PriorityLevelConfiguration"} {
		if strings.Contains(out.String(), kind) {
			t.Errorf("with --skip-flow-control the render has a %s", kind)
		}
	}
	if args := deploymentOf(ResourceObjects(DefaultOptions())).Spec.Template.Spec.Containers[0].Args; slices.ContainsFunc(args, func(a string) bool {
		return strings.HasPrefix(a, "--teardown-timeout") || strings.HasPrefix(a, "--insecure-registries") || strings.HasPrefix(a, "--zap-log-level") || strings.HasPrefix(a, "--zap-encoder") || strings.HasPrefix(a, "--enable-monitoring") || strings.HasPrefix(a, "--max-concurrent-reconciles") ||
			strings.HasPrefix(a, "--management-cluster-networks") || strings.HasPrefix(a, "--machine-allowed-endpoints")
	}) {
		t.Errorf("by default the operator's own flags are set: %v", args)
	}
}

// TestShards: --shards is rendered with what sharding needs: a Recreate
// rollout, so that two counts never run side by side, and a lease Role
// that covers the shard and member Leases; without it, neither.
func TestShards(t *testing.T) {
	o := DefaultOptions()
	d, role := deploymentOf(ResourceObjects(o)), leaseRoleOf(ResourceObjects(o))
	if d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType || slices.ContainsFunc(d.Spec.Template.Spec.Containers[0].Args, func(a string) bool { return strings.HasPrefix(a, "--shards") }) {
		t.Errorf("without --shards the operator rolls out with %q and args %v", d.Spec.Strategy.Type, d.Spec.Template.Spec.Containers[0].Args)
	}
	for _, rule := range role.Rules {
		if slices.Contains(rule.Verbs, "update") && len(rule.ResourceNames) == 0 {
			t.Errorf("without --shards the operator may update any Lease of its namespace: %v", rule)
		}
	}
	o.Shards = 4
	d, role = deploymentOf(ResourceObjects(o)), leaseRoleOf(ResourceObjects(o))
	if d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("with --shards=4 the operator rolls out with %q, want Recreate", d.Spec.Strategy.Type)
	}
	if !slices.Contains(d.Spec.Template.Spec.Containers[0].Args, "--shards=4") {
		t.Errorf("with --shards=4 the args lack it: %v", d.Spec.Template.Spec.Containers[0].Args)
	}
	if !slices.ContainsFunc(role.Rules, func(rule rbacv1.PolicyRule) bool {
		return slices.Contains(rule.Verbs, "update") && slices.Contains(rule.Verbs, "delete") && len(rule.ResourceNames) == 0
	}) {
		t.Errorf("with --shards=4 the lease Role does not cover the shard and member Leases: %v", role.Rules)
	}
	o.Shards = 1
	if d := deploymentOf(ResourceObjects(o)); d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType || slices.Contains(d.Spec.Template.Spec.Containers[0].Args, "--shards=1") {
		t.Errorf("with --shards=1 (the way back from several) the operator rolls out with %q and args %v, want Recreate and no --shards", d.Spec.Strategy.Type, d.Spec.Template.Spec.Containers[0].Args)
	}
}

func leaseRoleOf(objects []client.Object) *rbacv1.Role {
	for _, obj := range objects {
		if r, ok := obj.(*rbacv1.Role); ok && r.Name == rbac.LeaderElectionRole("", 1).Name {
			return r
		}
	}
	return nil
}

func deploymentOf(objects []client.Object) *appsv1.Deployment {
	for _, obj := range objects {
		if d, ok := obj.(*appsv1.Deployment); ok {
			return d
		}
	}
	return nil
}
