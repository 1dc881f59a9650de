package operator_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/control-plane-operator/components/etcd"
	"github.com/hypershift-le/hypershift/control-plane-operator/components/kubeapiserver"
	"github.com/hypershift-le/hypershift/control-plane-operator/components/kubecontrollermanager"
	"github.com/hypershift-le/hypershift/control-plane-operator/components/kubescheduler"
	"github.com/hypershift-le/hypershift/control-plane-operator/controllers/hostedcontrolplane"
	"github.com/hypershift-le/hypershift/control-plane-operator/pki"
	"github.com/hypershift-le/hypershift/support/testutil"
)

func getHCP(t *testing.T, cp *controlPlane) (*hyperv1.HostedControlPlane, error) {
	hcp := &hyperv1.HostedControlPlane{}
	err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(cp.hcp), hcp)
	return hcp, err
}

// rollOut writes the status a workload's controller writes once every
// replica runs (there are no nodes in the test control plane).
func rollOut(t *testing.T, cp *controlPlane, obj client.Object) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: cp.namespace, Name: obj.GetName()}, obj); err != nil {
			return err
		}
		switch w := obj.(type) {
		case *appsv1.Deployment:
			n := *w.Spec.Replicas
			w.Status = appsv1.DeploymentStatus{ObservedGeneration: w.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n}
		case *appsv1.StatefulSet:
			n := *w.Spec.Replicas
			w.Status = appsv1.StatefulSetStatus{ObservedGeneration: w.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n,
				CurrentReplicas: n, CurrentRevision: "r1", UpdateRevision: "r1"}
		}
		return env.Client.Status().Update(t.Context(), obj)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// workloads are the components' workloads, in the order the CPO applies
// them: each appears once those before it are available.
func workloads() []client.Object {
	return []client.Object{
		&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: etcd.Name}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: kubeapiserver.Name}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: kubecontrollermanager.Name}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: kubescheduler.Name}},
	}
}

// rollOutAll rolls out each workload as it appears.
func rollOutAll(t *testing.T, cp *controlPlane) {
	t.Helper()
	for _, w := range workloads() {
		testutil.Eventually(t, 30*time.Second, func() error {
			return env.Client.Get(t.Context(), client.ObjectKey{Namespace: cp.namespace, Name: w.GetName()}, w)
		})
		rollOut(t, cp, w)
	}
}

// TestStatusAndTeardown checks the HostedControlPlane's status follows its
// components, that a control plane whose kube-apiserver does not answer
// is ready but not Available, and that deleting it removes the components
// but keeps the CA.
func TestStatusAndTeardown(t *testing.T) {
	cp := newControlPlane(t, false)
	startCPO(t, cp, "cpo-a", cp.releaseImage)
	awaitHolder(t, cp, 30*time.Second, "cpo-a")
	awaitComponents(t, cp)

	testutil.Eventually(t, 30*time.Second, func() error {
		hcp, err := getHCP(t, cp)
		if err != nil {
			return err
		}
		if !slices.Contains(hcp.Finalizers, hostedcontrolplane.Finalizer) {
			return errors.New("no finalizer")
		}
		c := meta.FindStatusCondition(hcp.Status.Conditions, "KubeApiserverAvailable")
		if c == nil || c.Status != "False" || hcp.Status.Ready {
			return fmt.Errorf("before etcd runs: KubeApiserverAvailable=%+v ready=%v", c, hcp.Status.Ready)
		}
		return nil
	})
	// A control plane that never came up starts the kube-apiserver with
	// etcd; the controllers wait for the kube-apiserver to serve.
	for _, w := range workloads()[:2] {
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: cp.namespace, Name: w.GetName()}, w); err != nil {
			t.Fatalf("%s was not created with etcd on the first start: %v", w.GetName(), err)
		}
	}
	for _, w := range workloads()[2:] {
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: cp.namespace, Name: w.GetName()}, w); !apierrors.IsNotFound(err) {
			t.Fatalf("%s was applied before the kube-apiserver was available (%v)", w.GetName(), err)
		}
	}

	rollOutAll(t, cp)
	apiService := &corev1.Service{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: cp.namespace, Name: kubeapiserver.Name}, apiService); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		hcp, err := getHCP(t, cp)
		if err != nil {
			return err
		}
		for _, w := range workloads() {
			c := meta.FindStatusCondition(hcp.Status.Conditions, hostedcontrolplane.ComponentAvailable(w.GetName()))
			if c == nil || c.Status != "True" {
				return fmt.Errorf("%s: %+v", w.GetName(), c)
			}
		}
		if !hcp.Status.Ready || hcp.Status.Version != "4.17.0" || hcp.Status.ReleaseImage != cp.releaseImage {
			return fmt.Errorf("ready=%v version=%q releaseImage=%q", hcp.Status.Ready, hcp.Status.Version, hcp.Status.ReleaseImage)
		}
		want := &hyperv1.APIEndpoint{Host: "127.0.0.1", Port: apiService.Spec.Ports[0].NodePort}
		if diff := cmp.Diff(want, hcp.Status.ControlPlaneEndpoint); diff != "" {
			return fmt.Errorf("controlPlaneEndpoint (-want +got):\n%s", diff)
		}
		if hcp.Status.KubeConfig == nil || hcp.Status.KubeConfig.Name != pki.AdminKubeconfigSecret {
			return fmt.Errorf("kubeConfig = %+v", hcp.Status.KubeConfig)
		}
		// Nothing serves the NodePort in the test control plane.
		if c := meta.FindStatusCondition(hcp.Status.Conditions, hyperv1.Available); c == nil || c.Status != "False" || c.Reason != "KubeAPIServerNotReady" {
			return fmt.Errorf("Available: %+v", c)
		}
		return nil
	})

	if err := env.Client.Delete(t.Context(), cp.hcp); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		if _, err := getHCP(t, cp); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the HostedControlPlane is still there (%w)", err)
		}
		return nil
	})
	for _, w := range workloads() {
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: cp.namespace, Name: w.GetName()}, w); !apierrors.IsNotFound(err) {
			t.Errorf("%s outlived its HostedControlPlane (%v)", w.GetName(), err)
		}
	}
	for _, name := range []string{kubeapiserver.Name, etcd.ClientServiceName} {
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: cp.namespace, Name: name}, &corev1.Service{}); !apierrors.IsNotFound(err) {
			t.Errorf("the %s Service outlived its HostedControlPlane (%v)", name, err)
		}
	}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: cp.namespace, Name: pki.RootCASecret}, &corev1.Secret{}); err != nil {
		t.Errorf("the root CA went with the HostedControlPlane: it must stay for the namespace to take (%v)", err)
	}
}

// TestPause checks a paused HostedControlPlane gets no write until it is
// resumed, with no restart.
func TestPause(t *testing.T) {
	cp := newControlPlane(t, false)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		hcp, err := getHCP(t, cp)
		if err != nil {
			return err
		}
		hcp.Spec.PausedUntil = ptr.To("true")
		return env.Client.Update(t.Context(), hcp)
	})
	if err != nil {
		t.Fatal(err)
	}
	c := startCPO(t, cp, "cpo-a", cp.releaseImage)
	awaitHolder(t, cp, 30*time.Second, c.Pod)
	time.Sleep(3 * time.Second)
	for _, w := range successfulWrites(t, cp.namespace, c.user) {
		if !w.Lease() {
			t.Fatalf("a paused HostedControlPlane was written: %v", w)
		}
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		hcp, err := getHCP(t, cp)
		if err != nil {
			return err
		}
		hcp.Spec.PausedUntil = ptr.To(time.Now().Add(2 * time.Second).UTC().Format(time.RFC3339))
		return env.Client.Update(t.Context(), hcp)
	})
	if err != nil {
		t.Fatal(err)
	}
	awaitComponents(t, cp)
}

// TestOnlyItsOwnHostedControlPlane checks that a CPO never reads into or
// writes another HostedControlPlane that shares its namespace.
func TestOnlyItsOwnHostedControlPlane(t *testing.T) {
	cp := newControlPlane(t, false)
	other := cp.hcp.DeepCopy()
	other.ObjectMeta = metav1.ObjectMeta{Namespace: cp.namespace, Name: "other"}
	if err := env.Client.Create(t.Context(), other); err != nil {
		t.Fatal(err)
	}
	c := startCPO(t, cp, "cpo-a", cp.releaseImage)
	awaitHolder(t, cp, 30*time.Second, "cpo-a")
	awaitComponents(t, cp)
	testutil.Eventually(t, 30*time.Second, func() error {
		hcp, err := getHCP(t, cp)
		if err != nil {
			return err
		}
		if !slices.Contains(hcp.Finalizers, hostedcontrolplane.Finalizer) || len(hcp.Status.Conditions) == 0 {
			return errors.New("its own HostedControlPlane is not reconciled yet")
		}
		return nil
	})
	// Wake the controller for the other one too.
	patch := client.MergeFrom(other.DeepCopy())
	other.Labels = map[string]string{"touched": "true"}
	if err := env.Client.Patch(t.Context(), other, patch); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)

	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(other), other); err != nil {
		t.Fatal(err)
	}
	if len(other.Finalizers) > 0 || len(other.Status.Conditions) > 0 {
		t.Errorf("the other HostedControlPlane was reconciled: finalizers %v, conditions %v", other.Finalizers, other.Status.Conditions)
	}
	for _, w := range successfulWrites(t, cp.namespace, c.user) {
		if strings.HasPrefix(w.Resource, "hostedcontrolplanes") && w.Name == other.Name {
			t.Errorf("the CPO wrote the other HostedControlPlane: %s", w)
		}
	}
}
