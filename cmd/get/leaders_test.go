package get

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/cmd/cli"
	"github.com/hypershift-le/hypershift/support/leaderelection"
	"github.com/hypershift-le/hypershift/support/testutil"
	"github.com/hypershift-le/hypershift/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, testenv.Options{}, &env)) }

// fixedNow is the clock of every test, so durations and validity are stable.
var fixedNow = time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)

// lease returns a Lease whose times are offsets before fixedNow.
func lease(namespace, name, holder string, acquiredAgo, renewedAgo time.Duration, durationSeconds, transitions int32) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(holder),
			AcquireTime:          ptr.To(metav1.NewMicroTime(fixedNow.Add(-acquiredAgo))),
			RenewTime:            ptr.To(metav1.NewMicroTime(fixedNow.Add(-renewedAgo))),
			LeaseDurationSeconds: ptr.To(durationSeconds),
			LeaseTransitions:     ptr.To(transitions),
		},
	}
}

func hostedCluster(namespace, name string) *hyperv1.HostedCluster {
	return &hyperv1.HostedCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: hyperv1.HostedClusterSpec{
			Release:    hyperv1.Release{Image: "quay.io/ocp/release:4.17.0"},
			Platform:   hyperv1.PlatformSpec{Type: hyperv1.NonePlatform},
			PullSecret: hyperv1.LocalObjectReference{Name: "pull-secret"},
			Services:   hyperv1.NodePortServices("127.0.0.1", 0),
		},
	}
}

// createFixtures creates, under fixed names so golden files are stable, the
// hypershift-operator's Lease and HostedClusters whose control-plane Leases
// are valid, expired, released or missing. Objects that already exist (when
// the tests run more than once in a process) are kept.
func createFixtures(t *testing.T) {
	t.Helper()
	objs := []client.Object{}
	for _, ns := range []string{"hypershift", "leaders-a", "leaders-b", "leaders-a-demo", "leaders-a-stale", "leaders-a-failed", "leaders-b-alpha"} {
		objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	released := lease("leaders-b-alpha", hyperv1.ControlPlaneOperatorLeaseName, "", 10*time.Minute, 30*time.Second, 1, 2)
	objs = append(objs,
		lease("hypershift", hyperv1.HypershiftOperatorLeaseName, "hypershift-operator-a", 5*time.Minute, 3*time.Second, 15, 1),
		hostedCluster("leaders-b", "web.prod"), // its Lease and control-plane namespace are missing
		hostedCluster("leaders-b", "alpha"),
		hostedCluster("leaders-a", "stale"),
		hostedCluster("leaders-a", "demo"),
		lease("leaders-a-demo", hyperv1.ControlPlaneOperatorLeaseName, "control-plane-operator-x", 2*time.Minute+10*time.Second, time.Second, 15, 0),
		lease("leaders-a-stale", hyperv1.ControlPlaneOperatorLeaseName, "control-plane-operator-y", 240*time.Hour, 200*time.Hour, 15, 3), // its pod is gone
		// Its holder's pod failed a moment ago: the Lease is still valid,
		// until the hypershift-operator's release lands.
		hostedCluster("leaders-a", "failed"),
		lease("leaders-a-failed", hyperv1.ControlPlaneOperatorLeaseName, "control-plane-operator-z", time.Minute, 5*time.Second, 15, 1),
		released,
	)
	createUnlessExists(t, objs...)
	createPod(t, "leaders-a-demo", "control-plane-operator-x", corev1.PodRunning)
	createPod(t, "leaders-a-failed", "control-plane-operator-z", corev1.PodFailed)
}

// createUnlessExists creates objs, keeping those that already exist (the
// tests share fixed names, and may run more than once in a process).
func createUnlessExists(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, obj := range objs {
		if err := env.Client.Create(t.Context(), obj); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("failed to create %T %s: %v", obj, client.ObjectKeyFromObject(obj), err)
		}
	}
}

// createPod creates a control-plane-operator pod, unless it exists, and
// reports it in phase, as a kubelet would.
func createPod(t *testing.T, namespace, name string, phase corev1.PodPhase) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: hyperv1.ControlPlaneOperatorName, Image: "quay.io/ocp/hypershift:4.17.0"}}},
	}
	if err := env.Client.Create(t.Context(), pod); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return
		}
		t.Fatal(err)
	}
	pod.Status.Phase = phase
	if err := env.Client.Status().Update(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
}

// runGet runs `get args...` in-process with the fixed clock and returns its
// output (help included) and error.
func runGet(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	cmd := newCommand(func() time.Time { return fixedNow }, &out)
	cmd.SetOut(&out)
	cmd.SilenceUsage = true // as the hypershift root command does
	cmd.SetErr(io.Discard)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(t.Context())
	return out.String(), err
}

// compareGolden compares got with testdata/<name>; UPDATE=true rewrites it.
func compareGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if strings.EqualFold(os.Getenv("UPDATE"), "true") {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("failed to read the golden file (run with UPDATE=true to create it): %v", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("output differs from %s (run with UPDATE=true to accept; -golden +got):\n%s", path, diff)
	}
}

// kubeconfigWithNamespace copies the kubeconfig at path with its current
// context's namespace set to namespace.
func kubeconfigWithNamespace(t *testing.T, path, namespace string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Contexts[cfg.CurrentContext].Namespace = namespace
	out := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestLeadersOutput(t *testing.T) {
	createFixtures(t)
	admin, err := env.AddUserKubeconfig("leaders-admin", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	inLeadersA := kubeconfigWithNamespace(t, admin, "leaders-a")
	for _, tc := range []struct {
		golden string
		args   []string
	}{
		{golden: "all.table", args: []string{"leaders", "-A"}},
		{golden: "all.json", args: []string{"leaders", "--all-namespaces", "-o", "json"}},
		{golden: "all.yaml", args: []string{"leaders", "-A", "--output", "yaml"}},
		{golden: "namespace.table", args: []string{"leader", "-n", "leaders-b"}},
		// Names, as kubectl get takes them: only those, sorted, each once.
		{golden: "named.table", args: []string{"leaders", "stale", "demo", "stale", "-n", "leaders-a"}},
		// The kubeconfig context's namespace is not the default: clusters is,
		// for every command.
		{golden: "default-namespace.table", args: []string{"leaders", "--kubeconfig", inLeadersA, "--hypershift-namespace", "leaders-nowhere"}},
		{golden: "all.wide", args: []string{"leaders", "-A", "-o", "wide"}},
		{golden: "all-no-headers.table", args: []string{"leaders", "-A", "--no-headers"}},
		{golden: "holders.name", args: []string{"leaders", "-A", "-o", "name"}},
		{golden: "holders.jsonpath", args: []string{"leaders", "-A", "-o", `jsonpath={range .clusters[*]}{.name}={.lease.holderIdentity}{"\n"}{end}`}},
		{golden: "empty.table", args: []string{"leaders", "-n", "leaders-empty", "--hypershift-namespace", "leaders-nowhere"}},
		{golden: "empty.json", args: []string{"leaders", "--namespace", "leaders-empty", "--hypershift-namespace", "leaders-nowhere", "-o", "json"}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			args := tc.args
			if !strings.Contains(strings.Join(args, " "), "--kubeconfig") {
				args = append(args, "--kubeconfig", admin)
			}
			out, err := runGet(t, args...)
			if err != nil {
				t.Fatalf("get %s failed: %v", strings.Join(tc.args, " "), err)
			}
			compareGolden(t, tc.golden, out)
		})
	}
}

// TestLeadersOfShards: when the hypershift-operator runs shards, its Lease
// says how many, the shard Leases are listed under it, and each
// HostedCluster shows its shard and the replica holding it.
func TestLeadersOfShards(t *testing.T) {
	const hoNamespace, clusters = "leaders-sharded-ho", "leaders-sharded"
	ho := lease(hoNamespace, hyperv1.HypershiftOperatorLeaseName, "hypershift-operator-a", 5*time.Minute, 3*time.Second, 15, 1)
	ho.Annotations = map[string]string{hyperv1.OperatorShardsAnnotation: "2"}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: hoNamespace}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: clusters}},
		ho,
		lease(hoNamespace, leaderelection.ShardLeaseName(hyperv1.HypershiftOperatorLeaseName, 0), "hypershift-operator-a", 5*time.Minute, 2*time.Second, 15, 0),
		lease(hoNamespace, leaderelection.ShardLeaseName(hyperv1.HypershiftOperatorLeaseName, 1), "hypershift-operator-b", 4*time.Minute, time.Second, 15, 1),
		// Shards 0, 1 and 1 of 2.
		hostedCluster(clusters, "one"),
		hostedCluster(clusters, "two"),
		hostedCluster(clusters, "three"),
	}
	createUnlessExists(t, objs...)
	admin, err := env.AddUserKubeconfig("leaders-admin", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		golden string
		args   []string
	}{
		{golden: "sharded.table", args: []string{"leaders", "-n", clusters}},
		{golden: "sharded.json", args: []string{"leaders", "-n", clusters, "-o", "json"}},
		{golden: "sharded.name", args: []string{"leaders", "-n", clusters, "-o", "name"}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			out, err := runGet(t, append(tc.args, "--hypershift-namespace", hoNamespace, "--kubeconfig", admin)...)
			if err != nil {
				t.Fatal(err)
			}
			compareGolden(t, tc.golden, out)
		})
	}

	t.Run("a count that is not one refuses to guess", func(t *testing.T) {
		ho := ho.DeepCopy()
		ho.Namespace, ho.ResourceVersion = "leaders-sharded-bad", ""
		ho.Annotations[hyperv1.OperatorShardsAnnotation] = "0"
		createUnlessExists(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ho.Namespace}}, ho)
		_, err := runGet(t, "leaders", "-n", clusters, "--hypershift-namespace", ho.Namespace, "--kubeconfig", admin)
		want := `the hypershift-operator's Lease says it runs "0" shards (annotation ` + hyperv1.OperatorShardsAnnotation + `): not a count from 1 to 64`
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("got %v, want an error with %q", err, want)
		}
	})
}

// TestLeadersWithoutPodAccess: a user who may read HostedClusters and
// Leases but not pods sees every holder's pod as unknown, not as gone.
func TestLeadersWithoutPodAccess(t *testing.T) {
	createFixtures(t)
	kubeconfig, err := env.AddUserKubeconfig("leaders-no-pods", "leaders-no-pods")
	if err != nil {
		t.Fatal(err)
	}
	grant(t, "leaders-no-pods", []rbacv1.PolicyRule{
		{APIGroups: []string{hyperv1.GroupVersion.Group}, Resources: []string{"hostedclusters"}, Verbs: []string{"list"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get"}},
	}, authorizationv1.ResourceAttributes{Group: "coordination.k8s.io", Resource: "leases", Verb: "get"})
	out, err := runGet(t, "leaders", "-n", "leaders-a", "--kubeconfig", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	compareGolden(t, "no-pod-access.table", out)
}

func TestLeadersErrors(t *testing.T) {
	down := filepath.Join(t.TempDir(), "down.kubeconfig")
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["down"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1", InsecureSkipTLSVerify: true}
	cfg.AuthInfos["down"] = &clientcmdapi.AuthInfo{Token: "token"}
	cfg.Contexts["down"] = &clientcmdapi.Context{Cluster: "down", AuthInfo: "down", Namespace: "clusters"}
	cfg.CurrentContext = "down"
	if err := clientcmd.WriteToFile(*cfg, down); err != nil {
		t.Fatal(err)
	}
	nobody, err := env.AddUserKubeconfig("leaders-nobody")
	if err != nil {
		t.Fatal(err)
	}
	reader, err := env.AddUserKubeconfig("leaders-reader", "leaders-readers")
	if err != nil {
		t.Fatal(err)
	}
	grantListHostedClusters(t, "leaders-readers")
	createFixtures(t)
	admin, err := env.AddUserKubeconfig("leaders-errors-admin", "system:masters")
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{name: "bad output, checked before the API server is contacted", args: []string{"leaders", "-o", "custom-columns=A:.a", "--kubeconfig", down}, want: `unsupported output format "custom-columns=A:.a": use table, wide, name, json, yaml or jsonpath=TEMPLATE`},
		{name: "bad jsonpath, checked before the API server is contacted", args: []string{"leaders", "-o", "jsonpath={.clusters[", "--kubeconfig", down}, want: `invalid jsonpath template "{.clusters["`},
		{name: "watch with JSON", args: []string{"leaders", "-w", "-o", "json", "--kubeconfig", down}, want: "--watch prints table rows: use it with -o table or -o wide, not json"},
		{name: "a name with --all-namespaces, checked before the API server is contacted", args: []string{"leaders", "demo", "-A", "--kubeconfig", down}, want: "a HostedCluster cannot be retrieved by name across all namespaces"},
		{name: "an unknown name, as kubectl reports it", args: []string{"leaders", "nope", "-n", "leaders-a", "--kubeconfig", admin}, want: `hostedclusters.hypershift.openshift.io "nope" not found in namespace leaders-a`},
		{name: "unknown names beside a known one, each reported", args: []string{"leaders", "nope", "demo", "nada", "-n", "leaders-a", "--kubeconfig", admin},
			want: `hostedclusters.hypershift.openshift.io "nope" not found in namespace leaders-a; hostedclusters.hypershift.openshift.io "nada" not found in namespace leaders-a`},
		{name: "a name in another namespace is not found", args: []string{"leaders", "alpha", "-n", "leaders-a", "--kubeconfig", admin}, want: `hostedclusters.hypershift.openshift.io "alpha" not found in namespace leaders-a`},
		{name: "unknown subcommand", args: []string{"leaderz"}, want: `unknown command "leaderz" for "get"`},
		{name: "API server down", args: []string{"leaders", "--kubeconfig", down, "--request-timeout", "5s"}, want: "cannot reach the API server at https://127.0.0.1:1"},
		{name: "listing forbidden", args: []string{"leaders", "-n", "leaders-a", "--kubeconfig", nobody}, want: `cannot list resource "hostedclusters" in API group "hypershift.openshift.io" in the namespace "leaders-a"`},
		{name: "reading Leases forbidden", args: []string{"leaders", "-A", "--kubeconfig", reader}, want: `cannot get resource "leases" in API group "coordination.k8s.io" in the namespace "hypershift"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runGet(t, tc.args...)
			if err == nil {
				t.Fatalf("want an error containing %q, got none; output:\n%s", tc.want, out)
			}
			line := cli.OneLine(err)
			t.Logf("error: %s", line)
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans several lines: %q", err.Error())
			}
			if !strings.Contains(line, tc.want) {
				t.Errorf("error %q does not contain %q", line, tc.want)
			}
			if out != "" {
				t.Errorf("a failed command printed output:\n%s", out)
			}
		})
	}
}

// grantListHostedClusters lets group list HostedClusters everywhere, and
// nothing else.
func grantListHostedClusters(t *testing.T, group string) {
	t.Helper()
	rules := []rbacv1.PolicyRule{{APIGroups: []string{hyperv1.GroupVersion.Group}, Resources: []string{"hostedclusters"}, Verbs: []string{"list"}}}
	grant(t, group, rules, authorizationv1.ResourceAttributes{Group: hyperv1.GroupVersion.Group, Resource: "hostedclusters", Verb: "list"})
}

// grant binds a ClusterRole named after group, with rules, to group, and
// waits until the authorizer allows the group probe.
func grant(t *testing.T, group string, rules []rbacv1.PolicyRule, probe authorizationv1.ResourceAttributes) {
	t.Helper()
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: group},
		Rules:      rules,
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: group},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: group}},
	}
	createUnlessExists(t, role, binding)
	// The authorizer sees new bindings asynchronously: wait until it does.
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: "probe", Groups: []string{group},
			ResourceAttributes: &probe,
		}}
		if err := env.Client.Create(ctx, review); err != nil {
			return false, err
		}
		return review.Status.Allowed, nil
	})
	if err != nil {
		t.Fatalf("group %s was not allowed to %s %s: %v", group, probe.Verb, probe.Resource, err)
	}
}

// syncBuffer is a bytes.Buffer safe for a command writing while the test
// reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestLeadersWatch: with -w, after the table, a row is printed again when
// its Lease changes holder, and the command ends with its context.
func TestLeadersWatch(t *testing.T) {
	admin, err := env.AddUserKubeconfig("leaders-watcher", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	createUnlessExists(t,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "leaders-w"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "leaders-w-watched"}},
		hostedCluster("leaders-w", "watched"),
		lease("leaders-w-watched", hyperv1.ControlPlaneOperatorLeaseName, "control-plane-operator-old", time.Minute, time.Second, 15, 0),
	)
	out := &syncBuffer{}
	cmd := newCommand(func() time.Time { return fixedNow }, out)
	cmd.SetErr(io.Discard)
	cmd.SetArgs([]string{"leaders", "-n", "leaders-w", "-w", "--watch-interval=100ms", "--kubeconfig", admin})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	testutil.Eventually(t, 10*time.Second, func() error {
		if !strings.Contains(out.String(), "control-plane-operator-old") {
			return fmt.Errorf("no first listing yet:\n%s", out.String())
		}
		return nil
	})
	current := &coordinationv1.Lease{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: "leaders-w-watched", Name: hyperv1.ControlPlaneOperatorLeaseName}, current); err != nil {
		t.Fatal(err)
	}
	current.Spec.HolderIdentity = ptr.To("control-plane-operator-new")
	current.Spec.LeaseTransitions = ptr.To(int32(1))
	if err := env.Client.Update(t.Context(), current); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if last := lines[len(lines)-1]; !strings.HasPrefix(last, "leaders-w ") || !strings.Contains(last, "control-plane-operator-new") {
			return fmt.Errorf("the change is not printed as a row:\n%s", out.String())
		}
		return nil
	})
	if n := strings.Count(out.String(), "CONTROL PLANE NAMESPACE"); n != 1 {
		t.Errorf("the header is printed %d times, want once:\n%s", n, out.String())
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the watch ended with %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the watch did not end with its context")
	}
}
