package install

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hypershift-le/hypershift/support/testutil"
	"github.com/hypershift-le/hypershift/test/auditlog"
	"github.com/hypershift-le/hypershift/test/metricsscrape"
	"github.com/hypershift-le/hypershift/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, testenv.Options{AuditLog: true, SkipAdmissionPolicies: true}, &env))
}

// runInstall runs `hypershift install` in-process as user.
func runInstall(t *testing.T, kubeconfig string, args ...string) (string, error) {
	t.Helper()
	cmd := NewCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(append([]string{"--kubeconfig=" + kubeconfig, "--hypershift-image=quay.io/example/hypershift:v0.1.0"}, args...))
	cmd.SetContext(t.Context())
	err := cmd.Execute()
	return out.String(), err
}

func adminKubeconfig(t *testing.T, user string) string {
	t.Helper()
	path, err := env.AddUserKubeconfig(user, "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// expectInstalled checks every object install applies exists, and the CRDs
// are established.
func expectInstalled(t *testing.T, namespace string) {
	t.Helper()
	crdObjects, err := CRDObjects()
	if err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions()
	o.Namespace = namespace
	for _, obj := range append(crdObjects, ResourceObjects(o)...) {
		live := obj.DeepCopyObject().(client.Object)
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(obj), live); err != nil {
			t.Errorf("%s %s: %v", kindOf(obj), describe(obj), err)
			continue
		}
		if crd, ok := live.(*apiextensionsv1.CustomResourceDefinition); ok {
			established := false
			for _, c := range crd.Status.Conditions {
				established = established || (c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue)
			}
			if !established {
				t.Errorf("CRD %s is not established", crd.Name)
			}
		}
	}
}

func TestInstall(t *testing.T) {
	const user = "install-admin"
	kubeconfig := adminKubeconfig(t, user)
	out, err := runInstall(t, kubeconfig, "--namespace=hypershift-a")
	if err != nil {
		t.Fatalf("install failed: %v\n%s", err, out)
	}
	expectInstalled(t, "hypershift-a")

	t.Run("when run again, it changes nothing and writes nothing", func(t *testing.T) {
		since := time.Now()
		out, err := runInstall(t, kubeconfig, "--namespace=hypershift-a")
		if err != nil {
			t.Fatalf("second install failed: %v\n%s", err, out)
		}
		if strings.Contains(out, " applied") {
			t.Errorf("the second run applied something:\n%s", out)
		}
		events, err := env.AuditEvents()
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range events {
			if e.User.Username == user && auditlog.IsWrite(e) && e.RequestReceivedTimestamp.After(since) {
				t.Errorf("the second run wrote: %s %s %s", e.Verb, e.ObjectRef.Resource, e.ObjectRef.Name)
			}
		}
	})
}

func TestInstallDryRun(t *testing.T) {
	kubeconfig := adminKubeconfig(t, "dry-run-admin")
	out, err := runInstall(t, kubeconfig, "--namespace=hypershift-dry", "--dry-run")
	if err != nil {
		t.Fatalf("install --dry-run failed: %v\n%s", err, out)
	}
	if !strings.Contains(out, "(server dry run)") {
		t.Errorf("the output does not say it was a dry run:\n%s", out)
	}
	o := DefaultOptions()
	o.Namespace = "hypershift-dry"
	for _, obj := range ResourceObjects(o) {
		live := obj.DeepCopyObject().(client.Object)
		if obj.GetNamespace() == "" && kindOf(obj) != "Namespace" {
			continue // cluster-scoped objects may exist from another test
		}
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(obj), live); !apierrors.IsNotFound(err) {
			t.Errorf("%s %s was persisted by a dry run (%v)", kindOf(obj), describe(obj), err)
		}
	}
}

func TestInstallWaitUntilAvailableTimesOut(t *testing.T) {
	kubeconfig := adminKubeconfig(t, "wait-admin")
	out, err := runInstall(t, kubeconfig, "--namespace=hypershift-wait", "--wait-until-available", "--timeout=3s")
	if err == nil {
		t.Fatalf("want a timeout: the test control plane runs no pods\n%s", out)
	}
	if !strings.Contains(err.Error(), "was not available within 3s") || !strings.Contains(out, "Waiting for deployment hypershift-wait/hypershift-operator: 0 of 2 replicas available") {
		t.Fatalf("error %q, output:\n%s", err, out)
	}
}

func TestInstallUnreachable(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	raw := "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\nusers: [{name: u, user: {token: x}}]\n"
	if err := os.WriteFile(kubeconfig, []byte(raw), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := runInstall(t, kubeconfig, "--request-timeout=2s")
	if err == nil || !strings.Contains(err.Error(), "cannot reach the API server at https://127.0.0.1:1") {
		t.Fatalf("got %v", err)
	}
}

// TestRenderAppliesWithKubectl applies the rendered install with a real
// kubectl built from Go modules.
func TestRenderAppliesWithKubectl(t *testing.T) {
	assets, err := testenv.BinaryAssetsDirectory()
	if err != nil {
		t.Fatal(err)
	}
	kubectl := filepath.Join(assets, "kubectl")
	if _, err := os.Stat(kubectl); err != nil {
		t.Fatalf("%s is missing: run make testbin", kubectl)
	}
	for _, format := range []string{"yaml", "json"} {
		t.Run(format, func(t *testing.T) {
			cmd := newRenderCommand()
			var rendered bytes.Buffer
			cmd.SetOut(&rendered)
			ns := "hypershift-kubectl-" + format
			cmd.SetArgs([]string{"--namespace=" + ns, "--format=" + format})
			if err := cmd.Execute(); err != nil {
				t.Fatal(err)
			}
			apply := exec.CommandContext(t.Context(), kubectl, "apply", "--server-side", "--field-manager=kubectl-test", "--force-conflicts",
				"--kubeconfig="+adminKubeconfig(t, "kubectl-"+format), "-f", "-")
			apply.Stdin = &rendered
			out, err := apply.CombinedOutput()
			if err != nil {
				t.Fatalf("kubectl apply --server-side failed: %v\n%s", err, out)
			}
			expectInstalled(t, ns)
		})
	}
}

// TestInstallAndRenderConverge: a GitOps tool applying `install render`
// with its own field manager (kubectl apply --server-side) and
// `hypershift install` converge on the same objects: install onto what the
// tool applied changes nothing, and the tool applying again onto what
// install applied meets no conflict without --force-conflicts: both send
// the same values, the API server's defaults inside atomic structs
// included. (The first apply forces: the cluster-scoped objects are shared
// with the other tests' installs into other namespaces.)
func TestInstallAndRenderConverge(t *testing.T) {
	assets, err := testenv.BinaryAssetsDirectory()
	if err != nil {
		t.Fatal(err)
	}
	kubectl := filepath.Join(assets, "kubectl")
	kubeconfig := adminKubeconfig(t, "gitops")
	const ns = "hypershift-gitops"
	gitops := func(t *testing.T, extra ...string) {
		t.Helper()
		cmd := newRenderCommand()
		var rendered bytes.Buffer
		cmd.SetOut(&rendered)
		cmd.SetArgs([]string{"--namespace=" + ns, "--hypershift-image=quay.io/example/hypershift:v0.1.0"})
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		args := append([]string{"apply", "--server-side", "--field-manager=gitops", "--kubeconfig=" + kubeconfig, "-f", "-"}, extra...)
		apply := exec.CommandContext(t.Context(), kubectl, args...)
		apply.Stdin = &rendered
		if out, err := apply.CombinedOutput(); err != nil {
			t.Fatalf("kubectl %s failed: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	gitops(t, "--force-conflicts")
	deployment := &appsv1.Deployment{}
	key := client.ObjectKey{Namespace: ns, Name: name}
	if err := env.Client.Get(t.Context(), key, deployment); err != nil {
		t.Fatal(err)
	}
	generation := deployment.Generation
	// install takes its share of every object (one write each, the same
	// values), and rolls nothing out.
	out, err := runInstall(t, kubeconfig, "--namespace="+ns)
	if err != nil {
		t.Fatalf("install failed: %v\n%s", err, out)
	}
	if err := env.Client.Get(t.Context(), key, deployment); err != nil || deployment.Generation != generation {
		t.Errorf("install onto the applied render changed the Deployment: generation %d, was %d (%v)", deployment.Generation, generation, err)
	}
	gitops(t) // no --force-conflicts
	expectInstalled(t, ns)
}

// TestInstallWithMonitoring: with --enable-monitoring, install refuses
// clearly on a cluster without the Prometheus Operator's ServiceMonitor
// CRD, and applies the ServiceMonitor on one that has it.
func TestInstallWithMonitoring(t *testing.T) {
	kubeconfig := adminKubeconfig(t, "install-monitoring")
	const ns = "hypershift-monitoring"
	out, err := runInstall(t, kubeconfig, "--namespace="+ns, "--enable-monitoring")
	if err == nil || !strings.Contains(err.Error(), "--enable-monitoring needs the Prometheus Operator's ServiceMonitor CRD (monitoring.coreos.com/v1)") {
		t.Fatalf("without the ServiceMonitor CRD: %v, want an error naming the CRD\n%s", err, out)
	}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: ns}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused install created namespace %s (%v)", ns, err)
	}
	crd := metricsscrape.ServiceMonitorCRD()
	if err := env.Client.Create(t.Context(), crd); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		out, err := runInstall(t, kubeconfig, "--namespace="+ns, "--enable-monitoring")
		if err != nil {
			return fmt.Errorf("%w\n%s", err, out)
		}
		return nil
	})
	sm := &unstructured.Unstructured{}
	sm.SetGroupVersionKind(schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "ServiceMonitor"})
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, sm); err != nil {
		t.Fatal(err)
	}
	if scheme, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints"); len(scheme) != 1 || scheme[0].(map[string]any)["scheme"] != "https" {
		t.Errorf("the ServiceMonitor's endpoints are %v, want one over https", scheme)
	}
	d := &appsv1.Deployment{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
		t.Fatal(err)
	}
	if args := d.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--enable-monitoring") {
		t.Errorf("the operator runs with %v, want --enable-monitoring, so that control-plane-operators are scraped too", args)
	}
}
