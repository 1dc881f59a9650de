package hostedcluster_test

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/testutil"
)

// TestMachineImageCache checks that a HostedCluster of platform Pod gets a
// DaemonSet that keeps its release's machine image on every node, that it
// follows the release, and that it comes back when deleted; platform None
// gets none.
func TestMachineImageCache(t *testing.T) {
	startOperator(t, nil)
	c := newCluster(t, "4.17.0", func(hc *hyperv1.HostedCluster) {
		hc.Spec.Platform.Type = hyperv1.PodPlatform
		hc.Annotations = map[string]string{hyperv1.ClusterAPIManagerImageAnnotation: "registry.example/cluster-api:v1.13.6"}
	})
	key := client.ObjectKey{Namespace: c.controlPlaneNamespace(), Name: hyperv1.MachineImageCacheName}
	cacheOf := func(image string) func() error {
		return func() error {
			ds := &appsv1.DaemonSet{}
			if err := env.Client.Get(t.Context(), key, ds); err != nil {
				return err
			}
			if got := ds.Spec.Template.Spec.InitContainers[0].Image; got != image {
				return fmt.Errorf("the machine image cache holds %s, want %s", got, image)
			}
			return nil
		}
	}
	testutil.Eventually(t, converge, cacheOf(c.machineImage("4.17.0")))

	next := c.pushRelease(t, "4.17.1")
	c.update(t, func(hc *hyperv1.HostedCluster) { hc.Spec.Release.Image = next })
	testutil.Eventually(t, converge, cacheOf(c.machineImage("4.17.1")))

	if err := env.Client.Delete(t.Context(), &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, converge, cacheOf(c.machineImage("4.17.1")))

	none := newClusterIn(t, env.Namespace(t), "none", "4.17.0", nil)
	testutil.Eventually(t, converge, func() error {
		return env.Client.Get(t.Context(), client.ObjectKey{Namespace: none.controlPlaneNamespace(), Name: hyperv1.ControlPlaneOperatorName}, &appsv1.Deployment{})
	})
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: none.controlPlaneNamespace(), Name: hyperv1.MachineImageCacheName}, &appsv1.DaemonSet{}); err == nil {
		t.Error("a HostedCluster of platform None has a machine image cache")
	}
}
