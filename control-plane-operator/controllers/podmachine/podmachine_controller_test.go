package podmachine

import (
	"fmt"
	"net/netip"
	"os"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	infrav1 "github.com/hypershift-le/hypershift/api/infrastructure/v1beta1"
	"github.com/hypershift-le/hypershift/control-plane-operator/pki"
	"github.com/hypershift-le/hypershift/support/testutil"
	"github.com/hypershift-le/hypershift/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, testenv.Options{SkipAdmissionPolicies: true}, &env))
}

// TestMachinePod compares a machine's Pod with a golden file
// (UPDATE=true rewrites it).
func TestMachinePod(t *testing.T) {
	pm := &infrav1.PodMachine{
		ObjectMeta: metav1.ObjectMeta{Namespace: "clusters-demo", Name: "workers-7c9f8-x2x4k", UID: "0e5a1e7c-0000-4000-8000-000000000001"},
		Spec: infrav1.PodMachineSpec{
			Image: "registry.example.com/machine@sha256:0123", SandboxImage: "registry.example.com/pod@sha256:4567",
			InsecureRegistries: []string{"registry.example.com"},
		},
	}
	testutil.CompareWithGolden(t, "machine-pod", MachinePod(pm, "join-workers-3f2a", hyperv1.PullSecretName, netip.MustParsePrefix("10.132.0.0/14")))
}

// fixture is a control-plane namespace with its HostedControlPlane of
// platform Pod and a reconciler of its machines.
type fixture struct {
	ns  string
	r   *Reconciler
	hcp *hyperv1.HostedControlPlane
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ns := env.Namespace(t)
	hcp := &hyperv1.HostedControlPlane{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "demo"},
		Spec: hyperv1.HostedControlPlaneSpec{
			ReleaseImage: "registry.example.com/ocp-release:4.17.0",
			Platform:     hyperv1.PlatformSpec{Type: hyperv1.PodPlatform},
			PullSecret:   hyperv1.LocalObjectReference{Name: hyperv1.PullSecretName},
			Services: []hyperv1.ServicePublishingStrategyMapping{{Service: hyperv1.APIServer, ServicePublishingStrategy: hyperv1.ServicePublishingStrategy{
				Type: hyperv1.NodePort, NodePort: &hyperv1.NodePortPublishingStrategy{Address: "127.0.0.1"},
			}}},
		},
	}
	if err := env.Client.Create(t.Context(), hcp); err != nil {
		t.Fatal(err)
	}
	return &fixture{ns: ns, hcp: hcp, r: &Reconciler{Client: env.Client, HostedControlPlane: "demo", OperateOnReleaseImage: hcp.Spec.ReleaseImage}}
}

// machine creates a Machine and the PodMachine it owns, as cluster-api's
// MachineSet controller does; with bootstrap data when join is set.
func (f *fixture) machine(t *testing.T, name, join string) *infrav1.PodMachine {
	t.Helper()
	m := &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name},
		Spec: clusterv1.MachineSpec{
			ClusterName:       "demo",
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: infrav1.GroupVersion.Group, Kind: "PodMachine", Name: name},
		},
	}
	if join != "" {
		m.Spec.Bootstrap.DataSecretName = ptr.To(join)
	} else {
		// A bootstrap provider's config, whose data comes later.
		m.Spec.Bootstrap.ConfigRef = clusterv1.ContractVersionedObjectReference{APIGroup: "bootstrap.example.com", Kind: "Config", Name: name}
	}
	if err := env.Client.Create(t.Context(), m); err != nil {
		t.Fatal(err)
	}
	pm := &infrav1.PodMachine{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: clusterv1.GroupVersion.String(), Kind: "Machine", Name: m.Name, UID: m.UID, Controller: ptr.To(true),
		}}},
		Spec: infrav1.PodMachineSpec{Image: "registry.example.com/machine:1", SandboxImage: "registry.example.com/pod:1"},
	}
	if err := env.Client.Create(t.Context(), pm); err != nil {
		t.Fatal(err)
	}
	return pm
}

func (f *fixture) reconcile(t *testing.T, name string) ctrl.Result {
	t.Helper()
	result, err := f.r.Reconcile(t.Context(), ctrl.Request{NamespacedName: client.ObjectKey{Namespace: f.ns, Name: name}})
	if err != nil {
		t.Fatal(err)
	}
	return result
}

func (f *fixture) get(t *testing.T, obj client.Object, name string) error {
	t.Helper()
	return env.Client.Get(t.Context(), client.ObjectKey{Namespace: f.ns, Name: name}, obj)
}

func ready(pm *infrav1.PodMachine) *metav1.Condition {
	return meta.FindStatusCondition(pm.Status.Conditions, "Ready")
}

func TestReconcile(t *testing.T) {
	t.Run("a machine runs as its Pod once its Machine has bootstrap data, and reports its address", func(t *testing.T) {
		f := newFixture(t)
		pm := f.machine(t, "workers-a", "")
		f.reconcile(t, pm.Name)
		if err := f.get(t, &corev1.Pod{}, pm.Name); !apierrors.IsNotFound(err) {
			t.Fatalf("a Pod before the Machine has bootstrap data: %v", err)
		}
		if err := f.get(t, pm, pm.Name); err != nil {
			t.Fatal(err)
		}
		if c := ready(pm); c == nil || c.Reason != WaitingForBootstrapDataReason || pm.Spec.ProviderID != "pod://"+f.ns+"/workers-a" {
			t.Errorf("before bootstrap data: Ready %+v, providerID %q", c, pm.Spec.ProviderID)
		}

		m := &clusterv1.Machine{}
		if err := f.get(t, m, pm.Name); err != nil {
			t.Fatal(err)
		}
		m.Spec.Bootstrap.DataSecretName = ptr.To("join-workers-1")
		if err := env.Client.Update(t.Context(), m); err != nil {
			t.Fatal(err)
		}
		f.reconcile(t, pm.Name)
		pod := &corev1.Pod{}
		if err := f.get(t, pod, pm.Name); err != nil {
			t.Fatalf("no Pod once the Machine has bootstrap data: %v", err)
		}
		if !metav1.IsControlledBy(pod, pm) || pod.Spec.Volumes[0].Secret.SecretName != "join-workers-1" {
			t.Errorf("the Pod is not the machine's, with its bootstrap data: owners %v, volumes %v", pod.OwnerReferences, pod.Spec.Volumes)
		}
		// The machine runs its part of the pod network over the hosted
		// cluster's range (the API's default here), with its kubeconfig.
		if args := pod.Spec.Containers[0].Args; !slices.Contains(args, "--cluster-network=10.132.0.0/14") ||
			!slices.ContainsFunc(pod.Spec.Volumes, func(v corev1.Volume) bool {
				return v.Secret != nil && v.Secret.SecretName == pki.PodNetworkKubeconfigSecret
			}) {
			t.Errorf("the machine does not run the pod network over 10.132.0.0/14 with its kubeconfig: args %v, volumes %v", args, pod.Spec.Volumes)
		}

		// What the management cluster's kubelet reports once it runs.
		pod.Status.Phase, pod.Status.PodIP = corev1.PodRunning, "198.19.1.9"
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "machine", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		if err := env.Client.Status().Update(t.Context(), pod); err != nil {
			t.Fatal(err)
		}
		f.reconcile(t, pm.Name)
		if err := f.get(t, pm, pm.Name); err != nil {
			t.Fatal(err)
		}
		if pm.Status.Initialization == nil || !ptr.Deref(pm.Status.Initialization.Provisioned, false) || len(pm.Status.Addresses) == 0 ||
			pm.Status.Addresses[0] != (infrav1.MachineAddress{Type: "InternalIP", Address: "198.19.1.9"}) || ready(pm).Status != metav1.ConditionTrue {
			t.Errorf("a running machine: status %+v", pm.Status)
		}

		t.Run("a second pass writes nothing", func(t *testing.T) {
			before := pm.ResourceVersion
			f.reconcile(t, pm.Name)
			if err := f.get(t, pm, pm.Name); err != nil || pm.ResourceVersion != before {
				t.Errorf("resourceVersion %s -> %s (%v)", before, pm.ResourceVersion, err)
			}
		})

		t.Run("a deleted machine deletes its Pod, then goes", func(t *testing.T) {
			if err := env.Client.Delete(t.Context(), pm); err != nil {
				t.Fatal(err)
			}
			testutil.Eventually(t, 30*time.Second, func() error {
				f.reconcile(t, pm.Name)
				if err := f.get(t, &corev1.Pod{}, pm.Name); !apierrors.IsNotFound(err) {
					return errorf("the Pod is still there (%v)", err)
				}
				if err := f.get(t, &infrav1.PodMachine{}, pm.Name); !apierrors.IsNotFound(err) {
					return errorf("the PodMachine is still there (%v)", err)
				}
				return nil
			})
		})
	})

	t.Run("a control-plane-operator rolled out for another release makes no machine", func(t *testing.T) {
		f := newFixture(t)
		f.r.OperateOnReleaseImage = "registry.example.com/ocp-release:4.17.1"
		pm := f.machine(t, "workers-b", "join-workers-1")
		f.reconcile(t, pm.Name)
		if err := f.get(t, &corev1.Pod{}, pm.Name); !apierrors.IsNotFound(err) {
			t.Errorf("an outdated control-plane-operator made a Pod: %v", err)
		}
		if err := f.get(t, pm, pm.Name); err != nil || len(pm.Finalizers) > 0 || pm.Spec.ProviderID != "" {
			t.Errorf("an outdated control-plane-operator wrote the PodMachine: %+v (%v)", pm, err)
		}
	})

	t.Run("a Pod of an earlier machine of the same name is deleted first", func(t *testing.T) {
		f := newFixture(t)
		stale := MachinePod(&infrav1.PodMachine{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "workers-c", UID: "0e5a1e7c-0000-4000-8000-0000000000ff"},
			Spec: infrav1.PodMachineSpec{Image: "old", SandboxImage: "old"}}, "join-old", hyperv1.PullSecretName, netip.MustParsePrefix("10.132.0.0/14"))
		if err := env.Client.Create(t.Context(), stale); err != nil {
			t.Fatal(err)
		}
		pm := f.machine(t, "workers-c", "join-workers-1")
		testutil.Eventually(t, 30*time.Second, func() error {
			f.reconcile(t, pm.Name)
			pod := &corev1.Pod{}
			if err := f.get(t, pod, pm.Name); err != nil {
				return err
			}
			if pod.Spec.Containers[0].Image != pm.Spec.Image {
				return errorf("the Pod is still the earlier machine's (image %s)", pod.Spec.Containers[0].Image)
			}
			return nil
		})
	})
}

func TestClusterReconciler(t *testing.T) {
	ns := env.Namespace(t)
	pc := &infrav1.PodCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "demo"}}
	if err := env.Client.Create(t.Context(), pc); err != nil {
		t.Fatal(err)
	}
	r := &ClusterReconciler{Client: env.Client, HostedControlPlane: "demo"}
	for range 2 {
		if _, err := r.Reconcile(t.Context(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(pc)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(pc), pc); err != nil {
		t.Fatal(err)
	}
	if pc.Status.Initialization == nil || !ptr.Deref(pc.Status.Initialization.Provisioned, false) {
		t.Errorf("the PodCluster is not provisioned: %+v", pc.Status)
	}
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }
