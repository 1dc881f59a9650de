package operator_test

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hypershift-le/hypershift/control-plane-operator/component"
	"github.com/hypershift-le/hypershift/support/testutil"
)

// TestTamperedComponentsAreRepaired changes, as another field manager, a
// field of every object the CPO renders (the workloads' images and the
// Services' ports) and expects each back within 10s; once repaired, the
// CPO writes nothing more. The workloads are applied one layer at a time
// once what they depend on has rolled out, so the test first rolls each
// out as it appears, and rolls a repaired workload out again, as its
// controller would, before it tampers with the next.
func TestTamperedComponentsAreRepaired(t *testing.T) {
	cp := newControlPlane(t, false)
	c := startCPO(t, cp, "cpo-a", cp.releaseImage)
	awaitHolder(t, cp, 30*time.Second, "cpo-a")
	awaitComponents(t, cp)
	rollOutAll(t, cp)
	awaitReady(t, cp)

	inComponent := client.HasLabels{component.ComponentLabel}
	statefulSets := &appsv1.StatefulSetList{}
	deployments := &appsv1.DeploymentList{}
	services := &corev1.ServiceList{}
	for _, list := range []client.ObjectList{statefulSets, deployments, services} {
		if err := env.Client.List(t.Context(), list, client.InNamespace(cp.namespace), inComponent); err != nil {
			t.Fatal(err)
		}
	}
	if len(statefulSets.Items) != 1 || len(deployments.Items) != 3 || len(services.Items) == 0 {
		t.Fatalf("found %d StatefulSets, %d Deployments and %d Services to tamper with", len(statefulSets.Items), len(deployments.Items), len(services.Items))
	}
	var workloads []client.Object
	for i := range statefulSets.Items {
		workloads = append(workloads, &statefulSets.Items[i])
	}
	for i := range deployments.Items {
		workloads = append(workloads, &deployments.Items[i])
	}
	for _, w := range workloads {
		want := podTemplate(w).Spec.Containers
		tamperAndAwait(t, w, types.StrategicMergePatchType, `{"spec":{"template":{"spec":{"containers":[{"name":"`+want[0].Name+`","image":"registry.example/evil:1"}]}}}}`,
			func(obj client.Object) error {
				if got := podTemplate(obj).Spec.Containers; !equality.Semantic.DeepEqual(got, want) {
					return fmt.Errorf("containers still differ: image %s", got[0].Image)
				}
				return nil
			})
		rollOut(t, cp, w)
		awaitReady(t, cp)
	}
	for i := range services.Items {
		want := services.Items[i].Spec.Ports
		tamperAndAwait(t, &services.Items[i], types.MergePatchType, `{"spec":{"ports":[{"port":1,"targetPort":1,"name":"`+want[0].Name+`"}]}}`,
			func(obj client.Object) error {
				if got := obj.(*corev1.Service).Spec.Ports; !equality.Semantic.DeepEqual(got, want) {
					return fmt.Errorf("ports %v", got)
				}
				return nil
			})
	}
	time.Sleep(time.Second)
	quiet := time.Now()
	time.Sleep(3 * time.Second)
	for _, w := range successfulWrites(t, cp.namespace, c.user) {
		if w.At.After(quiet) && !w.Lease() {
			t.Errorf("once repaired, the CPO still wrote: %s", w)
		}
	}
}

// podTemplate returns a workload's pod template.
func podTemplate(obj client.Object) *corev1.PodTemplateSpec {
	switch w := obj.(type) {
	case *appsv1.Deployment:
		return &w.Spec.Template
	case *appsv1.StatefulSet:
		return &w.Spec.Template
	}
	return &corev1.PodTemplateSpec{}
}

// awaitReady waits until the HostedControlPlane reports every component
// rolled out.
func awaitReady(t *testing.T, cp *controlPlane) {
	t.Helper()
	testutil.Eventually(t, 30*time.Second, func() error {
		hcp, err := getHCP(t, cp)
		if err != nil {
			return err
		}
		if !hcp.Status.Ready {
			return fmt.Errorf("not ready: %+v", hcp.Status.Conditions)
		}
		return nil
	})
}

// tamperAndAwait patches obj as another field manager and waits up to 10s
// for repaired to accept the live object.
func tamperAndAwait(t *testing.T, obj client.Object, patchType types.PatchType, patch string, repaired func(client.Object) error) {
	t.Helper()
	if err := env.Client.Patch(t.Context(), obj, client.RawPatch(patchType, []byte(patch)), client.FieldOwner("tamperer")); err != nil {
		t.Fatalf("%T %s: %v", obj, obj.GetName(), err)
	}
	if repaired(obj) == nil {
		t.Fatalf("%T %s: the change did not take", obj, obj.GetName())
	}
	start := time.Now()
	testutil.Eventually(t, 10*time.Second, func() error {
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		return repaired(obj)
	})
	t.Logf("%T %s repaired after %s", obj, obj.GetName(), time.Since(start).Round(time.Millisecond))
}
