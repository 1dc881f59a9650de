package versions

import (
	"bytes"
	"os"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hypershift-le/hypershift/cmd/install"
	"github.com/hypershift-le/hypershift/support/version"
	"github.com/hypershift-le/hypershift/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, testenv.Options{}, &env)) }

func run(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	kubeconfig, err := env.AddUserKubeconfig("version-reader", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	cmd := NewCommand()
	var out, warn bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&warn)
	cmd.SetArgs(append([]string{"--kubeconfig=" + kubeconfig}, args...))
	err = cmd.ExecuteContext(t.Context())
	return out.String(), warn.String(), err
}

// TestVersion checks what `hypershift version` prints before and after an
// install, and the warning on a skew between the CLI and the operator.
func TestVersion(t *testing.T) {
	ns := env.Namespace(t)
	t.Run("with --client, only the CLI's build", func(t *testing.T) {
		out, _, err := run(t, "--client")
		if err != nil || out != "Client: "+version.String()+"\n" {
			t.Fatalf("got %q, %v", out, err)
		}
	})
	t.Run("before an install, the management cluster and no operator", func(t *testing.T) {
		out, _, err := run(t, "--hypershift-namespace", ns)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"Client: " + version.String(), "Management cluster: Kubernetes v1.", "hypershift-operator: not installed (no Deployment " + ns + "/hypershift-operator)"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
	})
	t.Run("with an operator of another version, both versions and a warning", func(t *testing.T) {
		labels := map[string]string{"app": operatorName}
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: operatorName, Labels: map[string]string{install.VersionLabel: "v9.9.9"}},
			Spec: appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: operatorName, Image: "registry.example/hypershift:v9.9.9"}}}},
			},
		}
		if err := env.Client.Create(t.Context(), d); err != nil {
			t.Fatal(err)
		}
		out, warn, err := run(t, "--hypershift-namespace", ns)
		if err != nil {
			t.Fatal(err)
		}
		if want := "hypershift-operator: v9.9.9, image registry.example/hypershift:v9.9.9"; !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
		if want := "warning: the CLI (" + version.Version + ") and the hypershift-operator (v9.9.9) differ"; !strings.Contains(warn, want) {
			t.Errorf("stderr lacks %q:\n%s", want, warn)
		}
	})
}
