package operator_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/control-plane-operator/controllers/hostedcontrolplane"
	"github.com/hypershift-le/hypershift/control-plane-operator/render"
	"github.com/hypershift-le/hypershift/support/testutil"
)

func getHCP(t *testing.T, cp *controlPlane) (*hyperv1.HostedControlPlane, error) {
	hcp := &hyperv1.HostedControlPlane{}
	err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(cp.hcp), hcp)
	return hcp, err
}

// rollOut writes the Deployment status the deployment controller writes
// once every replica runs (there are no nodes in the test control plane).
func rollOut(t *testing.T, cp *controlPlane, name string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d := &appsv1.Deployment{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: cp.namespace, Name: name}, d); err != nil {
			return err
		}
		replicas := *d.Spec.Replicas
		d.Status = appsv1.DeploymentStatus{
			ObservedGeneration: d.Generation, Replicas: replicas, UpdatedReplicas: replicas,
			ReadyReplicas: replicas, AvailableReplicas: replicas,
		}
		return env.Client.Status().Update(t.Context(), d)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestStatusAndTeardown checks the HostedControlPlane's status follows its
// components, and that deleting it removes them before the finalizer goes.
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
			return fmt.Errorf("before any replica runs: KubeApiserverAvailable=%+v ready=%v", c, hcp.Status.Ready)
		}
		return nil
	})

	for _, name := range render.ComponentNames {
		rollOut(t, cp, name)
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		hcp, err := getHCP(t, cp)
		if err != nil {
			return err
		}
		for _, name := range render.ComponentNames {
			c := meta.FindStatusCondition(hcp.Status.Conditions, hostedcontrolplane.ComponentAvailable(name))
			if c == nil || c.Status != "True" {
				return fmt.Errorf("%s: %+v", name, c)
			}
		}
		if !hcp.Status.Ready || hcp.Status.Version != "4.17.0" || hcp.Status.ReleaseImage != cp.releaseImage {
			return fmt.Errorf("ready=%v version=%q releaseImage=%q", hcp.Status.Ready, hcp.Status.Version, hcp.Status.ReleaseImage)
		}
		if c := meta.FindStatusCondition(hcp.Status.Conditions, hyperv1.Available); c == nil || c.Status != "True" {
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
	for _, name := range render.ComponentNames {
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: cp.namespace, Name: name}, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
			t.Errorf("deployment %s outlived its HostedControlPlane (%v)", name, err)
		}
	}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: cp.namespace, Name: render.KubeAPIServer}, &corev1.Service{}); !apierrors.IsNotFound(err) {
		t.Errorf("the kube-apiserver Service outlived its HostedControlPlane (%v)", err)
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
	awaitHolder(t, cp, 30*time.Second, c.pod)
	time.Sleep(3 * time.Second)
	for _, w := range successfulWrites(t, cp.namespace, c.user) {
		if !w.isLease() {
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
		if strings.HasPrefix(w.resource, "hostedcontrolplanes") && w.name == other.Name {
			t.Errorf("the CPO wrote the other HostedControlPlane: %s", w)
		}
	}
}
