package kubeconfig

import (
	"bytes"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, testenv.Options{}, &env)) }

// hostedCluster creates a HostedCluster in ns; with a server, it reports
// an admin kubeconfig to it in its status, as the hypershift-operator does.
func hostedCluster(t *testing.T, ns, name, server string) {
	t.Helper()
	hc := &hyperv1.HostedCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: hyperv1.HostedClusterSpec{
			Release:    hyperv1.Release{Image: "quay.io/x/y:1"},
			Platform:   hyperv1.PlatformSpec{Type: hyperv1.NonePlatform},
			PullSecret: hyperv1.LocalObjectReference{Name: "pull-secret"},
			Services:   hyperv1.NodePortServices("127.0.0.1", 0),
		},
	}
	if err := env.Client.Create(t.Context(), hc); err != nil {
		t.Fatal(err)
	}
	if server == "" {
		return
	}
	raw := "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: '" + server + "'}}]\n" +
		"contexts: [{name: admin, context: {cluster: c, user: admin}}]\ncurrent-context: admin\nusers: [{name: admin, user: {token: " + name + "}}]\n"
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: hyperv1.AdminKubeconfigName(name)},
		Data: map[string][]byte{hyperv1.KubeconfigKey: []byte(raw)}}
	if err := env.Client.Create(t.Context(), secret); err != nil {
		t.Fatal(err)
	}
	hc.Status.KubeConfig = &hyperv1.LocalObjectReference{Name: secret.Name}
	if err := env.Client.Status().Update(t.Context(), hc); err != nil {
		t.Fatal(err)
	}
}

func run(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	kubeconfig, err := env.AddUserKubeconfig("kubeconfig-reader", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	cmd := NewCommand()
	var out, log bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&log)
	cmd.SetArgs(append(args, "--kubeconfig="+kubeconfig))
	cmd.SetContext(t.Context())
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err = cmd.Execute()
	return out.String(), log.String(), err
}

func TestCreateKubeconfig(t *testing.T) {
	a, b := env.Namespace(t), env.Namespace(t)
	hostedCluster(t, a, "one", "https://127.0.0.1:30001")
	hostedCluster(t, b, "two", "https://api.two.example.com:6443")
	hostedCluster(t, b, "pending", "")

	t.Run("its name completes from the namespace's HostedClusters, given as the argument too", func(t *testing.T) {
		kubeconfig, err := env.AddUserKubeconfig("kubeconfig-reader", "system:masters")
		if err != nil {
			t.Fatal(err)
		}
		cmd := NewCommand()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetArgs([]string{"__complete", "--kubeconfig=" + kubeconfig, "-n", b, ""})
		if err := cmd.ExecuteContext(t.Context()); err != nil {
			t.Fatal(err)
		}
		if got := strings.Fields(out.String()); len(got) < 2 || got[0] != "pending" || got[1] != "two" {
			t.Fatalf("completion %q, want pending and two", out.String())
		}
		byArg, _, err := run(t, "one", "-n", a)
		if err != nil {
			t.Fatal(err)
		}
		byFlag, _, err := run(t, "--name=one", "-n", a)
		if err != nil || byArg != byFlag {
			t.Fatalf("the argument and --name differ: %v\n%s\n%s", err, byArg, byFlag)
		}
	})

	t.Run("with a name, it prints that cluster's kubeconfig as it is", func(t *testing.T) {
		out, _, err := run(t, "--name=one", "--namespace="+a)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := clientcmd.Load([]byte(out))
		if err != nil || cfg.Clusters["c"] == nil || cfg.Clusters["c"].Server != "https://127.0.0.1:30001" || cfg.AuthInfos["admin"].Token != "one" {
			t.Fatalf("kubeconfig %v, %v:\n%s", cfg, err, out)
		}
	})
	t.Run("with the name of a cluster that reports none, it says so", func(t *testing.T) {
		_, _, err := run(t, "--name=pending", "--namespace="+b)
		if err == nil || !strings.Contains(err.Error(), "HostedCluster "+b+"/pending reports no kubeconfig yet") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("without a name, it merges every cluster's into a context of its own", func(t *testing.T) {
		out, log, err := run(t)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := clientcmd.Load([]byte(out))
		if err != nil {
			t.Fatal(err)
		}
		for name, want := range map[string]struct{ server, token string }{
			a + "-one": {"https://127.0.0.1:30001", "one"},
			b + "-two": {"https://api.two.example.com:6443", "two"},
		} {
			ctx := cfg.Contexts[name]
			if ctx == nil || cfg.Clusters[ctx.Cluster].Server != want.server || cfg.AuthInfos[ctx.AuthInfo].Token != want.token || ctx.AuthInfo != name+"-admin" {
				t.Errorf("context %s = %+v", name, ctx)
			}
		}
		if _, ok := cfg.Contexts[b+"-pending"]; ok || !strings.Contains(log, "Skipping "+b+"/pending: reports no kubeconfig yet") {
			t.Errorf("the cluster without a kubeconfig: contexts %v, log:\n%s", cfg.Contexts, log)
		}
		if cfg.CurrentContext == "" || cfg.Contexts[cfg.CurrentContext] == nil {
			t.Errorf("current context %q", cfg.CurrentContext)
		}
	})
}
