package nodepool

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	infrav1 "github.com/hypershift-le/hypershift/api/infrastructure/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/rbac"
	"github.com/hypershift-le/hypershift/support/releaseinfo"
	"github.com/hypershift-le/hypershift/support/releaseinfo/releasetest"
	"github.com/hypershift-le/hypershift/support/testutil"
	"github.com/hypershift-le/hypershift/test/auditlog"
	"github.com/hypershift-le/hypershift/test/testenv"
)

func testMachineInputs() machineInputs {
	return machineInputs{
		pool: &hyperv1.NodePool{
			ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: "workers", Annotations: map[string]string{
				MachineHealthCheckTimeoutAnnotation: "90s", MachineHealthCheckMaxUnhealthyAnnotation: "50%",
			}},
			Spec: hyperv1.NodePoolSpec{
				ClusterName: "demo", Replicas: ptr.To(int32(3)),
				Platform:         hyperv1.NodePoolPlatform{Type: hyperv1.PodPlatform},
				Management:       hyperv1.NodePoolManagement{UpgradeType: hyperv1.UpgradeTypeReplace, AutoRepair: true},
				NodeDrainTimeout: &metav1.Duration{Duration: 2 * time.Minute},
			},
		},
		cluster:    "demo",
		join:       map[string][]byte{hyperv1.BootstrapKubeconfigKey: []byte("kubeconfig"), hyperv1.CACertKey: []byte("ca"), hyperv1.KubeletConfigKey: []byte("kubelet")},
		configHash: "0123456789abcdef", machineImage: "registry.example.com/machine@sha256:01", sandboxImage: "registry.example.com/pod@sha256:02",
		insecureRegistries: []string{"registry.example.com"},
	}
}

// TestMachineObjectsGolden compares a pool's cluster-api objects with
// golden files (UPDATE=true rewrites them).
func TestMachineObjectsGolden(t *testing.T) {
	in := testMachineInputs()
	testutil.CompareWithGolden(t, "pod/machinedeployment", machineDeployment(in))
	testutil.CompareWithGolden(t, "pod/podmachinetemplate", podMachineTemplate(in))
	testutil.CompareWithGolden(t, "pod/machinehealthcheck", machineHealthCheck(in))
	testutil.CompareWithGolden(t, "pod/bootstrap-secret", bootstrapSecret(in))
}

func TestRolloutStrategy(t *testing.T) {
	two, zero := intstr.FromInt32(2), intstr.FromString("0%")
	for _, tc := range []struct {
		name string
		m    hyperv1.NodePoolManagement
		want string
	}{
		{"by default, one machine above replicas and none unavailable", hyperv1.NodePoolManagement{UpgradeType: hyperv1.UpgradeTypeReplace}, "RollingUpdate 1 0"},
		{"the pool's bounds when it sets them", hyperv1.NodePoolManagement{Replace: &hyperv1.ReplaceUpgrade{Strategy: hyperv1.UpgradeStrategyRollingUpdate,
			RollingUpdate: &hyperv1.RollingUpdate{MaxSurge: &two, MaxUnavailable: &zero}}}, "RollingUpdate 2 0%"},
		{"OnDelete replaces a machine only once it is deleted", hyperv1.NodePoolManagement{Replace: &hyperv1.ReplaceUpgrade{Strategy: hyperv1.UpgradeStrategyOnDelete}}, "OnDelete"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := rolloutStrategy(tc.m)
			got := string(s.Type)
			if s.Type == clusterv1.RollingUpdateMachineDeploymentStrategyType {
				got += " " + s.RollingUpdate.MaxSurge.String() + " " + s.RollingUpdate.MaxUnavailable.String()
			}
			if got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

// podPool is a pool of platform Pod whose HostedCluster (of platform
// platform) runs, with its admin kubeconfig published: what a reconcile
// needs to make machines.
type podPool struct {
	r           *Reconciler
	np          *hyperv1.NodePool
	cpNamespace string
	releases    []string
}

func newPodPool(t *testing.T, platform hyperv1.PlatformType, withMachineImage bool) *podPool {
	t.Helper()
	ns := env.Namespace(t)
	registry := releasetest.NewRegistry(t)
	var releases []string
	for _, version := range []string{"4.17.0", "4.17.1"} {
		refs := map[string]string{"hypershift": registry.Host() + "/hypershift:" + version, SandboxImageTag: registry.Host() + "/pod:" + version}
		if withMachineImage {
			refs[MachineImageTag] = registry.Host() + "/machine:" + version
		}
		image, _ := registry.PushRelease(t, "ocp-release:"+version, version, refs)
		releases = append(releases, image)
	}
	if err := env.Client.Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pull-secret"},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: registry.DockerConfigJSON("u", "p")},
	}); err != nil {
		t.Fatal(err)
	}
	hc := createClusterOf(t, ns, releases[1], platform)
	hc.Status.Version = &hyperv1.ClusterVersionStatus{Desired: configv1.Release{Version: "4.17.1"}}
	if err := env.Client.Status().Update(t.Context(), hc); err != nil {
		t.Fatal(err)
	}
	cpNamespace := hyperv1.ControlPlaneNamespace(ns, "demo")
	if err := env.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cpNamespace}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.Delete(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cpNamespace}})
	})
	adminPath, err := env.AddUserKubeconfig("nodepool-pod-admin", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(adminPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: hyperv1.AdminKubeconfigName("demo")},
		Data:       map[string][]byte{hyperv1.KubeconfigKey: raw},
	}); err != nil {
		t.Fatal(err)
	}
	np := &hyperv1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "workers"},
		Spec: hyperv1.NodePoolSpec{
			ClusterName: "demo", Replicas: ptr.To(int32(2)),
			Release:    hyperv1.Release{Image: releases[0]},
			Platform:   hyperv1.NodePoolPlatform{Type: hyperv1.PodPlatform},
			Management: hyperv1.NodePoolManagement{UpgradeType: hyperv1.UpgradeTypeReplace},
		},
	}
	if err := env.Client.Create(t.Context(), np); err != nil {
		t.Fatal(err)
	}
	// The controller runs with the hypershift-operator's ClusterRole, as
	// hypershift install binds it: a write it needs and lacks fails here.
	user := "nodepool-" + ns
	testenv.BindClusterRole(t, env.Client, rbac.ClusterRole(), user)
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	operator, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{Client: operator, APIReader: operator, Releases: releaseinfo.NewRegistryProvider(releaseinfo.WithInsecureRegistries(registry.Host())),
		InsecureRegistries: []string{registry.Host()}}
	return &podPool{r: r, np: np, cpNamespace: cpNamespace, releases: releases}
}

func (p *podPool) reconcile(t *testing.T) ctrl.Result {
	t.Helper()
	res, err := p.r.Reconcile(t.Context(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(p.np)})
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(p.np), p.np); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return res
}

func (p *podPool) machineDeployment(t *testing.T) *clusterv1.MachineDeployment {
	t.Helper()
	md := &clusterv1.MachineDeployment{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: p.cpNamespace, Name: p.np.Name}, md); err != nil {
		t.Fatal(err)
	}
	return md
}

// machine creates a Machine of the pool, made by MachineSet set, as
// cluster-api would.
func (p *podPool) machine(t *testing.T, name, set string) *clusterv1.Machine {
	t.Helper()
	m := &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.cpNamespace, Name: name, Labels: map[string]string{
			clusterv1.ClusterNameLabel: "demo", hyperv1.NodePoolLabel: p.np.Name, clusterv1.MachineSetNameLabel: set,
		}},
		Spec: clusterv1.MachineSpec{
			ClusterName: "demo", Bootstrap: clusterv1.Bootstrap{DataSecretName: ptr.To("x")},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: infrav1.GroupVersion.Group, Kind: "PodMachine", Name: name},
		},
	}
	if err := env.Client.Create(t.Context(), m); err != nil {
		t.Fatal(err)
	}
	return m
}

// machineSet creates a MachineSet of the pool making machines of template
// and bootstrap Secret join, as the MachineDeployment's controller would.
func (p *podPool) machineSet(t *testing.T, name, template, join string) {
	t.Helper()
	labels := map[string]string{clusterv1.ClusterNameLabel: "demo", hyperv1.NodePoolLabel: p.np.Name}
	ms := &clusterv1.MachineSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.cpNamespace, Name: name, Labels: labels},
		Spec: clusterv1.MachineSetSpec{
			ClusterName: "demo", Replicas: ptr.To(int32(1)), Selector: metav1.LabelSelector{MatchLabels: labels},
			Template: clusterv1.MachineTemplateSpec{
				ObjectMeta: clusterv1.ObjectMeta{Labels: labels},
				Spec: clusterv1.MachineSpec{
					ClusterName: "demo", Bootstrap: clusterv1.Bootstrap{DataSecretName: ptr.To(join)},
					InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: infrav1.GroupVersion.Group, Kind: "PodMachineTemplate", Name: template},
				},
			},
		},
	}
	if err := env.Client.Create(t.Context(), ms); err != nil {
		t.Fatal(err)
	}
}

func exists(t *testing.T, obj client.Object, namespace, name string) bool {
	t.Helper()
	err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: namespace, Name: name}, obj)
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

// TestNodePoolOfPlatformPod follows a pool whose machines the management
// cluster runs: its MachineDeployment runs spec.replicas machines of a
// template and bootstrap Secret named after its config; a new release is a
// new template and Secret, the MachineDeployment moves to them, the pool
// says it updates until every machine is of them, and the old ones go once
// no MachineSet uses them; autoRepair adds and removes a
// MachineHealthCheck; a deleted pool deletes its MachineDeployment and
// waits for its machines.
func TestNodePoolOfPlatformPod(t *testing.T) {
	p := newPodPool(t, hyperv1.PodPlatform, true)
	p.reconcile(t)
	md := p.machineDeployment(t)
	template, join := md.Spec.Template.Spec.InfrastructureRef.Name, *md.Spec.Template.Spec.Bootstrap.DataSecretName
	if *md.Spec.Replicas != 2 || !strings.HasPrefix(template, "workers-") || !strings.HasPrefix(join, "workers-join-") {
		t.Fatalf("MachineDeployment %+v", md.Spec)
	}
	pmt := &infrav1.PodMachineTemplate{}
	if !exists(t, pmt, p.cpNamespace, template) || !strings.HasSuffix(pmt.Spec.Template.Spec.Image, "/machine:4.17.0") || !strings.HasSuffix(pmt.Spec.Template.Spec.SandboxImage, "/pod:4.17.0") {
		t.Fatalf("the template does not run the release's machine image: %+v", pmt.Spec)
	}
	secret := &corev1.Secret{}
	if !exists(t, secret, p.cpNamespace, join) || len(secret.Data[hyperv1.BootstrapKubeconfigKey]) == 0 || len(secret.Data[hyperv1.KubeletConfigKey]) == 0 {
		t.Fatalf("the bootstrap Secret holds no join material: %v", secret.Data)
	}
	if exists(t, &corev1.Secret{}, p.np.Namespace, hyperv1.NodePoolJoinSecretName(p.np.Name)) {
		t.Error("a pool of platform Pod publishes a join Secret beside it: its machines' join material stays in the control-plane namespace")
	}
	if exists(t, &clusterv1.MachineHealthCheck{}, p.cpNamespace, p.np.Name) {
		t.Error("a MachineHealthCheck without autoRepair")
	}
	p.machineSet(t, "workers-a", template, join)
	p.machine(t, "workers-a-1", "workers-a")
	p.reconcile(t)
	if p.np.Status.Version != "4.17.0" || condition(t, p.np, hyperv1.UpdatingVersion).Status != metav1.ConditionFalse {
		t.Fatalf("version %q, UpdatingVersion %+v", p.np.Status.Version, condition(t, p.np, hyperv1.UpdatingVersion))
	}

	t.Run("a second pass writes nothing", func(t *testing.T) {
		before := md.ResourceVersion
		started := time.Now()
		p.reconcile(t)
		if after := p.machineDeployment(t).ResourceVersion; after != before {
			t.Errorf("the MachineDeployment was written: %s -> %s", before, after)
		}
		// The API server's record: no request that writes (refused or
		// not: a delete of what is not there is one) in the namespace.
		events, err := env.AuditEvents()
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range auditlog.Writes(events, auditlog.Query{Namespace: p.cpNamespace}) {
			if w.At.After(started) {
				t.Errorf("a second pass sent %s %s/%s (%d)", w.Verb, w.Resource, w.Name, w.Code)
			}
		}
	})

	t.Run("a new release rolls the machines to a new template", func(t *testing.T) {
		p.np.Spec.Release.Image = p.releases[1]
		if err := env.Client.Update(t.Context(), p.np); err != nil {
			t.Fatal(err)
		}
		p.reconcile(t)
		md := p.machineDeployment(t)
		next := md.Spec.Template.Spec.InfrastructureRef.Name
		if next == template || *md.Spec.Template.Spec.Bootstrap.DataSecretName == join {
			t.Fatalf("the MachineDeployment still makes machines of %s and %s", next, join)
		}
		if c := condition(t, p.np, hyperv1.UpdatingVersion); c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "Updating from 4.17.0 to 4.17.1") {
			t.Errorf("UpdatingVersion %+v", c)
		}
		if !exists(t, &infrav1.PodMachineTemplate{}, p.cpNamespace, template) || !exists(t, &corev1.Secret{}, p.cpNamespace, join) {
			t.Fatal("the earlier template or Secret is gone while a MachineSet still makes machines of it")
		}
		// cluster-api replaced the machine and removed the old MachineSet.
		if err := env.Client.Delete(t.Context(), &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: p.cpNamespace, Name: "workers-a-1"}}); err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Delete(t.Context(), &clusterv1.MachineSet{ObjectMeta: metav1.ObjectMeta{Namespace: p.cpNamespace, Name: "workers-a"}}); err != nil {
			t.Fatal(err)
		}
		p.machineSet(t, "workers-b", next, *md.Spec.Template.Spec.Bootstrap.DataSecretName)
		p.machine(t, "workers-b-1", "workers-b")
		p.reconcile(t)
		if c := condition(t, p.np, hyperv1.UpdatingVersion); c.Status != metav1.ConditionFalse || p.np.Status.Version != "4.17.1" {
			t.Errorf("after the rollout: version %q, UpdatingVersion %+v", p.np.Status.Version, c)
		}
		if exists(t, &infrav1.PodMachineTemplate{}, p.cpNamespace, template) || exists(t, &corev1.Secret{}, p.cpNamespace, join) {
			t.Error("the earlier template or Secret outlives the MachineSets that used it")
		}
	})

	t.Run("autoRepair adds a MachineHealthCheck, and takes it away again", func(t *testing.T) {
		p.np.Spec.Management.AutoRepair = true
		if err := env.Client.Update(t.Context(), p.np); err != nil {
			t.Fatal(err)
		}
		p.reconcile(t)
		mhc := &clusterv1.MachineHealthCheck{}
		if !exists(t, mhc, p.cpNamespace, p.np.Name) || mhc.Spec.Selector.MatchLabels[hyperv1.NodePoolLabel] != p.np.Name {
			t.Fatalf("MachineHealthCheck %+v", mhc.Spec)
		}
		p.np.Spec.Management.AutoRepair = false
		if err := env.Client.Update(t.Context(), p.np); err != nil {
			t.Fatal(err)
		}
		p.reconcile(t)
		if exists(t, &clusterv1.MachineHealthCheck{}, p.cpNamespace, p.np.Name) {
			t.Error("the MachineHealthCheck outlives autoRepair")
		}
	})

	t.Run("a deleted pool waits for its machines, then goes", func(t *testing.T) {
		if err := env.Client.Delete(t.Context(), p.np); err != nil {
			t.Fatal(err)
		}
		p.reconcile(t)
		if exists(t, &clusterv1.MachineDeployment{}, p.cpNamespace, p.np.Name) {
			t.Error("the MachineDeployment outlives its pool's deletion")
		}
		if !exists(t, &hyperv1.NodePool{}, p.np.Namespace, p.np.Name) {
			t.Fatal("the pool went while a machine of it is left")
		}
		if c := condition(t, p.np, hyperv1.Ready); c.Reason != DeletingReason || !strings.Contains(c.Message, "waiting for 1 machines to be drained and removed: workers-b-1") {
			t.Errorf("Ready while deleting: %+v", c)
		}
		m := &clusterv1.Machine{}
		if exists(t, m, p.cpNamespace, "workers-b-1"); m.Annotations[clusterv1.ExcludeNodeDrainingAnnotation] != "" {
			t.Error("a machine of a pool deleted on its own is not drained")
		}
		if err := env.Client.Delete(t.Context(), &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: p.cpNamespace, Name: "workers-b-1"}}); err != nil {
			t.Fatal(err)
		}
		p.reconcile(t)
		if exists(t, &hyperv1.NodePool{}, p.np.Namespace, p.np.Name) {
			t.Error("the pool stays with no machine left")
		}
		list := &infrav1.PodMachineTemplateList{}
		if err := env.Client.List(t.Context(), list, client.InNamespace(p.cpNamespace)); err != nil || len(list.Items) > 0 {
			t.Errorf("templates left: %v (%v)", list.Items, err)
		}
	})
}

// TestNodePoolOfAClusterBeingDeleted checks that the machines of a pool
// deleted with its HostedCluster are not drained: a PodDisruptionBudget
// would hold the cluster's teardown for good.
func TestNodePoolOfAClusterBeingDeleted(t *testing.T) {
	p := newPodPool(t, hyperv1.PodPlatform, true)
	p.reconcile(t)
	p.machine(t, "workers-a-1", "workers-a")
	hc := &hyperv1.HostedCluster{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: p.np.Namespace, Name: p.np.Spec.ClusterName}, hc); err != nil {
		t.Fatal(err)
	}
	// Held by a finalizer, as the hypershift-operator's teardown holds it.
	hc.Finalizers = append(hc.Finalizers, "test.hypershift.openshift.io/hold")
	if err := env.Client.Update(t.Context(), hc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.Patch(context.Background(), hc, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
	})
	for _, obj := range []client.Object{hc, p.np} {
		if err := env.Client.Delete(t.Context(), obj); err != nil {
			t.Fatal(err)
		}
	}
	p.reconcile(t)
	m := &clusterv1.Machine{}
	if !exists(t, m, p.cpNamespace, "workers-a-1") {
		t.Fatal("the machine is gone")
	}
	for _, a := range []string{clusterv1.ExcludeNodeDrainingAnnotation, clusterv1.ExcludeWaitForNodeVolumeDetachAnnotation} {
		if _, ok := m.Annotations[a]; !ok {
			t.Errorf("the machine of a pool deleted with its cluster lacks %s: %v", a, m.Annotations)
		}
	}
	if c := condition(t, p.np, hyperv1.Ready); !strings.Contains(c.Message, "waiting for 1 machines to be removed (not drained: their HostedCluster is being deleted): workers-a-1") {
		t.Errorf("Ready while deleting: %+v", c)
	}
}

func TestNodePoolOfPlatformPodRefusals(t *testing.T) {
	t.Run("a HostedCluster of platform None runs no machines", func(t *testing.T) {
		p := newPodPool(t, hyperv1.NonePlatform, true)
		p.reconcile(t)
		if c := condition(t, p.np, hyperv1.ValidPlatformConfig); c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "is of platform None, which runs no machines") {
			t.Errorf("ValidPlatformConfig %+v", c)
		}
		if exists(t, &clusterv1.MachineDeployment{}, p.cpNamespace, p.np.Name) {
			t.Error("a MachineDeployment on a cluster of platform None")
		}
	})
	t.Run("a release without a machine image makes no machines", func(t *testing.T) {
		p := newPodPool(t, hyperv1.PodPlatform, false)
		p.reconcile(t)
		if c := condition(t, p.np, hyperv1.ValidReleaseImage); c.Status != metav1.ConditionFalse || c.Reason != NoMachineImageReason {
			t.Errorf("ValidReleaseImage %+v", c)
		}
		if exists(t, &clusterv1.MachineDeployment{}, p.cpNamespace, p.np.Name) {
			t.Error("a MachineDeployment of a release without a machine image")
		}
	})
}
