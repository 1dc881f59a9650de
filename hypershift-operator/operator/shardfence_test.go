package operator_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/rbac"
	"github.com/hypershift-le/hypershift/hypershift-operator/render"
	"github.com/hypershift-le/hypershift/support/leaderelection"
	"github.com/hypershift-le/hypershift/support/releaseinfo/releasetest"
	"github.com/hypershift-le/hypershift/support/testutil"
	"github.com/hypershift-le/hypershift/test/operatorprocess"
)

// startPodProcess runs `hypershift-operator run` as it runs in its pod:
// as the HO's ServiceAccount in namespace, with a token bound to Pod pod
// (which the API server puts into the request's user as the pod's name,
// what fencing judges), and POD_NAME=pod.
func startPodProcess(t *testing.T, namespace, pod string, shards int, extraArgs ...string) *operatorprocess.Process {
	t.Helper()
	ctx := t.Context()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: rbac.HypershiftOperatorName}}
	if err := env.Client.Create(ctx, sa); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	grantSubject(t, namespace, pod, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: sa.Name}, shards)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: pod},
		Spec: corev1.PodSpec{
			ServiceAccountName: sa.Name,
			Containers:         []corev1.Container{{Name: "operator", Image: "example.com/hypershift:4.17.0"}},
		},
	}
	if err := env.Client.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	admin, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	token, err := admin.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To(int64(3600)),
		BoundObjectRef:    &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: p.Name, UID: p.UID},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := clientcmdapi.NewConfig()
	kubeconfig.Clusters["envtest"] = &clientcmdapi.Cluster{Server: env.Config.Host, CertificateAuthorityData: env.Config.CAData}
	kubeconfig.AuthInfos[pod] = &clientcmdapi.AuthInfo{Token: token.Status.Token}
	kubeconfig.Contexts[pod] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: pod}
	kubeconfig.CurrentContext = pod
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kubeconfig, path); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"run",
		"--kubeconfig=" + path,
		"--namespace=" + namespace,
		"--leader-elect-lease-duration=6s", "--leader-elect-renew-deadline=4s", "--leader-elect-retry-period=1s",
		"--metrics-bind-address=0",
		"--health-probe-bind-address=" + operatorprocess.FreeAddress(t),
		"--shards=" + strconv.Itoa(shards),
	}, extraArgs...)
	return operatorprocess.Start(t, binary, pod, args)
}

// awaitFenced waits until the API server refuses, by the operator's fence,
// a write in namespace ns by writer, a pod of the HO's ServiceAccount in
// hoNamespace that does not hold Lease lease, the refusal naming the
// Lease and its holder.
func awaitFenced(t *testing.T, hoNamespace, ns, lease, writer, holder string) {
	t.Helper()
	c := env.AsPod(t, hoNamespace, rbac.HypershiftOperatorName, writer)
	var err error
	testutil.Eventually(t, 30*time.Second, func() error {
		err = c.Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "stale-"}})
		switch {
		case err == nil:
			return fmt.Errorf("%s, which does not hold Lease %s, may write in namespace %s", writer, lease, ns)
		case !strings.Contains(err.Error(), render.OperatorFencingMessageMarker+" "+writer):
			return fmt.Errorf("%s, which does not hold Lease %s, is not refused by the fence in namespace %s: %w", writer, lease, ns, err)
		}
		return nil
	})
	if !strings.Contains(err.Error(), "(holder: "+holder+")") || !strings.Contains(err.Error(), hoNamespace+"/"+lease) {
		t.Errorf("the refusal names neither Lease %s nor its holder %s: %v", lease, holder, err)
	}
}

// assertClusterFenced checks that hc, of shard, converged under the fence:
// its control-plane namespace, the HostedCluster, its NodePool ("workers")
// and its EtcdBackup ("nightly") carry the shard's label, and a pod of the
// HO's ServiceAccount that does not hold the shard's Lease (held by
// holder) may change neither the namespace nor the HostedCluster.
func assertClusterFenced(t *testing.T, hoNamespace string, hc *hyperv1.HostedCluster, shard leaderelection.Shard, holder string) {
	t.Helper()
	ctx := t.Context()
	want := shard.Label()
	cp := hyperv1.ControlPlaneNamespace(hc.Namespace, hc.Name)
	ns := &corev1.Namespace{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: cp}, ns); err != nil {
		t.Fatal(err)
	}
	if got := ns.Labels[hyperv1.OperatorShardLabel]; got != want {
		t.Errorf("namespace %s is labelled %s=%q, want %q", cp, hyperv1.OperatorShardLabel, got, want)
	}
	lease := shard.LeaseName(hyperv1.HypershiftOperatorLeaseName)
	awaitFenced(t, hoNamespace, cp, lease, "ho-fenced-gone", holder)
	for _, obj := range []client.Object{&hyperv1.HostedCluster{}, &hyperv1.NodePool{}, &hyperv1.EtcdBackup{}} {
		name := hc.Name
		switch obj.(type) {
		case *hyperv1.NodePool:
			name = "workers"
		case *hyperv1.EtcdBackup:
			name = "nightly"
		}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: hc.Namespace, Name: name}, obj); err != nil {
			t.Fatal(err)
		}
		if got := obj.GetLabels()[hyperv1.OperatorShardLabel]; got != want {
			t.Errorf("%T %s/%s is labelled %s=%q, want %q", obj, hc.Namespace, name, hyperv1.OperatorShardLabel, got, want)
		}
	}
	// The object binding is applied beside the namespace one, and comes
	// into force on its own: waited for, as every binding change.
	stale := env.AsPod(t, hoNamespace, rbac.HypershiftOperatorName, "ho-fenced-gone")
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"example.com/stale":"true"}}}`))
	testutil.Eventually(t, 30*time.Second, func() error {
		err := stale.Patch(ctx, &hyperv1.HostedCluster{ObjectMeta: metav1.ObjectMeta{Namespace: hc.Namespace, Name: hc.Name}}, patch)
		if err == nil || !strings.Contains(err.Error(), render.OperatorFencingMessageMarker+" ho-fenced-gone") || !strings.Contains(err.Error(), "(holder: "+holder+")") {
			// What judged it, for the record.
			binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
			berr := env.Client.Get(ctx, client.ObjectKey{Name: render.OperatorShardBindingNames(shard.Index)[1]}, binding)
			spec, _ := json.Marshal(binding.Spec)
			return fmt.Errorf("a pod that does not hold Lease %s patched HostedCluster %s/%s: %v (object binding: %s, %v)", lease, hc.Namespace, hc.Name, err, spec, berr) //nolint:errorlint // nil or the wrong refusal, reported as is
		}
		return nil
	})
}

// fencedProbeNamespace is a namespace labelled as the HO labels the
// control-plane namespaces of shard: the fence is in force before any
// HostedCluster.
func fencedProbeNamespace(t *testing.T, shard leaderelection.Shard) string {
	t.Helper()
	probe := env.Namespace(t)
	env.LabelNamespace(t, probe, map[string]string{
		hyperv1.HostedControlPlaneLabel: "true",
		hyperv1.OperatorShardLabel:      shard.Label(),
	})
	return probe
}

// TestShardFencedOperator runs the hypershift-operator as in its pod, with
// two shards: the API server refuses writes in a shard's control-plane
// namespaces by a pod of its ServiceAccount that does not hold the
// shard's Lease, and takes the holder's, whose HostedClusters converge
// under the fence.
func TestShardFencedOperator(t *testing.T) {
	const shards = 2
	hoNamespace := env.Namespace(t)
	const pod, other = "ho-fenced-a", "ho-fenced-b"
	startPodProcess(t, hoNamespace, pod, shards)
	awaitShards(t, hoNamespace, []string{pod, pod}, 30*time.Second)
	shard := func(i int) leaderelection.Shard { return leaderelection.Shard{Index: i, Count: shards} }
	awaitFenced(t, hoNamespace, fencedProbeNamespace(t, shard(0)), shardLease(0), "ho-fenced-gone", pod)

	// The holder writes under it: HostedClusters of both shards converge,
	// their objects labelled with their shard, and refuse the others.
	registry := releasetest.NewRegistry(t)
	image, _ := registry.PushRelease(t, "ocp-release:4.17.0", "4.17.0", map[string]string{"hypershift": registry.Host() + "/hypershift:4.17.0"})
	shardOf := func(hc *hyperv1.HostedCluster) int { return shardAmong(hc, shards) }
	clusters := clustersInEveryShard(t, registry, image, shards)
	awaitReconciled(t, clusters...)
	for _, hc := range clusters {
		assertClusterFenced(t, hoNamespace, hc, shard(shardOf(hc)), pod)
	}

	// A second replica takes shard 1 and writes under its fence; killed,
	// it is refused there, the shard back with the survivor, which
	// reconciles a new HostedCluster of it.
	b := startPodProcess(t, hoNamespace, other, shards)
	awaitShards(t, hoNamespace, []string{pod, other}, 30*time.Second)
	newOfShard1 := func() *hyperv1.HostedCluster {
		for range 20 {
			if hc := newClusterWithPoolAndBackup(t, registry, image); shardOf(hc) == 1 {
				return hc
			}
		}
		t.Fatal("20 new HostedClusters, none of shard 1")
		return nil
	}
	second := newOfShard1()
	awaitReconciled(t, second)
	awaitFenced(t, hoNamespace, hyperv1.ControlPlaneNamespace(second.Namespace, second.Name), shardLease(1), pod, other)
	if err := b.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	awaitShards(t, hoNamespace, []string{pod, pod}, 30*time.Second)
	awaitFenced(t, hoNamespace, hyperv1.ControlPlaneNamespace(second.Namespace, second.Name), shardLease(1), other, pod)
	awaitReconciled(t, newOfShard1())
}

// TestLeaseFencedOperator runs the hypershift-operator as in its pod, with
// one shard, as it ships: the API server judges its pods' writes in the
// control-plane namespaces, and to the HostedClusters, NodePools and
// EtcdBackups, by the operator's own Lease. The holder's HostedClusters
// converge under the fence; a standby, and a leader killed (SIGKILL) once
// its successor leads, are refused. Run with fencing off, it deletes its
// bindings.
func TestLeaseFencedOperator(t *testing.T) {
	ctx := t.Context()
	hoNamespace := env.Namespace(t)
	const pod, other = "ho-lease-a", "ho-lease-b"
	lease := hyperv1.HypershiftOperatorLeaseName
	a := startPodProcess(t, hoNamespace, pod, 1)
	testutil.Eventually(t, 30*time.Second, func() error {
		if h := holder(t, hoNamespace); h != pod {
			return fmt.Errorf("the HO Lease is held by %q, want %s", h, pod)
		}
		return nil
	})
	whole := leaderelection.Shard{}
	awaitFenced(t, hoNamespace, fencedProbeNamespace(t, whole), lease, "ho-fenced-gone", pod)

	registry := releasetest.NewRegistry(t)
	image, _ := registry.PushRelease(t, "ocp-release:4.17.0", "4.17.0", map[string]string{"hypershift": registry.Host() + "/hypershift:4.17.0"})
	first := newClusterWithPoolAndBackup(t, registry, image)
	awaitReconciled(t, first)
	assertClusterFenced(t, hoNamespace, first, whole, pod)

	// A standby writes nothing it could: it is refused while it waits.
	b := startPodProcess(t, hoNamespace, other, 1)
	awaitFenced(t, hoNamespace, hyperv1.ControlPlaneNamespace(first.Namespace, first.Name), lease, other, pod)
	if err := a.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		if h := holder(t, hoNamespace); h != other {
			return fmt.Errorf("the HO Lease is held by %q, want %s", h, other)
		}
		return nil
	})
	awaitFenced(t, hoNamespace, hyperv1.ControlPlaneNamespace(first.Namespace, first.Name), lease, pod, other)
	second := newClusterWithPoolAndBackup(t, registry, image)
	awaitReconciled(t, second)
	assertClusterFenced(t, hoNamespace, second, whole, other)

	// Run with fencing off, the operator deletes its bindings: no Lease
	// judges its writes any more.
	if err := b.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	startPodProcess(t, hoNamespace, "ho-lease-c", 1, "--enable-fencing=false")
	testutil.Eventually(t, 30*time.Second, func() error {
		for _, name := range render.OperatorShardBindingNames(0) {
			err := env.Client.Get(ctx, client.ObjectKey{Name: name}, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{})
			if !apierrors.IsNotFound(err) {
				return fmt.Errorf("binding %s: want NotFound, got %w", name, err)
			}
		}
		return nil
	})
	stale := env.AsPod(t, hoNamespace, rbac.HypershiftOperatorName, "ho-fenced-gone")
	testutil.Eventually(t, 30*time.Second, func() error {
		return stale.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: hyperv1.ControlPlaneNamespace(second.Namespace, second.Name), GenerateName: "unfenced-"}})
	})
}
