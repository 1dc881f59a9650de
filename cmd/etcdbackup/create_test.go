package etcdbackup

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	backupcontroller "github.com/hypershift-le/hypershift/hypershift-operator/controllers/etcdbackup"
	"github.com/hypershift-le/hypershift/support/scheme"
	"github.com/hypershift-le/hypershift/support/testutil"
	"github.com/hypershift-le/hypershift/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	os.Exit(testenv.Main(m, testenv.Options{SkipAdmissionPolicies: true}, &env))
}

// execute runs the command in-process and returns its output.
func execute(ctx context.Context, args ...string) (string, error) {
	root := &cobra.Command{Use: "create"}
	root.AddCommand(NewCreateCommand())
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(append([]string{"etcd-backup"}, args...))
	root.SetContext(ctx)
	err := root.Execute()
	return out.String(), err
}

func TestCreateRenderGolden(t *testing.T) {
	out, err := execute(t.Context(), "demo-nightly", "--cluster-name=demo", "--claim-name=backups", "-n", "clusters", "--render")
	if err != nil {
		t.Fatal(err)
	}
	testutil.CompareBytesWithGolden(t, "create-etcd-backup.yaml", []byte(out))
}

func TestCreateRefusesBadInput(t *testing.T) {
	kubeconfig, err := env.AddUserKubeconfig("etcdbackup-cli-refusals", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	ns := env.Namespace(t)
	createCluster(t, ns, false)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"a name that is no DNS label", []string{"Nightly.1", "--cluster-name=demo", "--claim-name=backups"}, `invalid EtcdBackup name "Nightly.1": it must be a lowercase RFC 1123 label of at most 50 characters`},
		{"a claim name that is no DNS subdomain", []string{"nightly", "--cluster-name=demo", "--claim-name=Backups_1"}, `invalid --claim-name "Backups_1"`},
		{"render and wait", []string{"nightly", "--cluster-name=demo", "--claim-name=backups", "--render", "--wait"}, "--render prints the EtcdBackup and creates nothing: it cannot --wait"},
		{"a cluster that does not exist", []string{"nightly", "--cluster-name=nowhere", "--claim-name=backups", "-n", ns, "--kubeconfig=" + kubeconfig},
			"HostedCluster " + ns + "/nowhere does not exist: name an existing one with --cluster-name (kubectl get hc -n " + ns + ")"},
		{"a claim that does not exist", []string{"nightly", "--cluster-name=demo", "--claim-name=backups", "-n", ns, "--kubeconfig=" + kubeconfig},
			"PersistentVolumeClaim " + ns + "/backups does not exist: create the claim the snapshot is written to first"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := execute(t.Context(), tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q\n%s", err, tc.want, out)
			}
		})
	}
	backups := &hyperv1.EtcdBackupList{}
	if err := env.Client.List(t.Context(), backups, client.InNamespace(ns)); err != nil || len(backups.Items) != 0 {
		t.Errorf("refused input left EtcdBackups %v (%v)", backups.Items, err)
	}
}

// TestCreateWaitReportsAFailedBackup runs the hypershift-operator's
// EtcdBackup controller: a backup of a cluster that is being deleted
// fails, and --wait ends with the operator's reason instead of waiting out
// its timeout; a second backup of the same name is refused.
func TestCreateWaitReportsAFailedBackup(t *testing.T) {
	kubeconfig, err := env.AddUserKubeconfig("etcdbackup-cli", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	ns := env.Namespace(t)
	hc := createCluster(t, ns, true)
	if err := env.Client.Delete(t.Context(), hc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		live := &hyperv1.HostedCluster{}
		if env.Client.Get(context.Background(), client.ObjectKeyFromObject(hc), live) == nil {
			live.Finalizers = nil
			_ = env.Client.Update(context.Background(), live)
		}
	})
	if err := env.Client.Create(t.Context(), &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "backups"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}); err != nil {
		t.Fatal(err)
	}
	runController(t)
	out, err := execute(t.Context(), "nightly", "--cluster-name=demo", "--claim-name=backups", "-n", ns, "--wait", "--timeout=30s", "--kubeconfig="+kubeconfig)
	if err == nil || !strings.Contains(err.Error(), "EtcdBackup "+ns+"/nightly failed: HostedCluster demo is being deleted") {
		t.Fatalf("error %v, want the operator's reason\n%s", err, out)
	}
	if !strings.Contains(out, "EtcdBackup "+ns+"/nightly created: a snapshot of HostedCluster demo's etcd goes to nightly.db on PersistentVolumeClaim backups") {
		t.Errorf("output:\n%s", out)
	}
	if _, err := execute(t.Context(), "nightly", "--cluster-name=demo", "--claim-name=backups", "-n", ns, "--kubeconfig="+kubeconfig); err == nil ||
		!strings.Contains(err.Error(), "EtcdBackup "+ns+"/nightly already exists: a backup is taken once; choose another name") {
		t.Errorf("second create: %v", err)
	}
}

func createCluster(t *testing.T, ns string, finalizer bool) *hyperv1.HostedCluster {
	t.Helper()
	hc := &hyperv1.HostedCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "demo"},
		Spec: hyperv1.HostedClusterSpec{
			Release: hyperv1.Release{Image: "quay.io/openshift-release-dev/ocp-release:4.17.0-x86_64"}, Platform: hyperv1.PlatformSpec{Type: hyperv1.NonePlatform},
			PullSecret: hyperv1.LocalObjectReference{Name: "pull-secret"}, Services: hyperv1.NodePortServices("198.18.0.11", 0),
		},
	}
	if finalizer {
		hc.Finalizers = []string{"test.hypershift.openshift.io/hold"}
	}
	if err := env.Client.Create(t.Context(), hc); err != nil {
		t.Fatal(err)
	}
	return hc
}

// runController runs the EtcdBackup controller in a manager of its own
// until the test ends.
func runController(t *testing.T) {
	t.Helper()
	cacheOptions := ctrl.Options{}.Cache
	backupcontroller.AddCacheOptions(&cacheOptions)
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:     scheme.New(),
		Cache:      cacheOptions,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: new(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := &backupcontroller.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader()}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = mgr.Start(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
}
