package hostedcontrolplane

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hypershift-le/hypershift/control-plane-operator/components/etcd"
	"github.com/hypershift-le/hypershift/control-plane-operator/components/kubeapiserver"
	"github.com/hypershift-le/hypershift/control-plane-operator/components/kubecontrollermanager"
	"github.com/hypershift-le/hypershift/control-plane-operator/components/kubescheduler"
	"github.com/hypershift-le/hypershift/support/testutil"
)

// images returns the image each workload runs, by name.
func (cp *controlPlane) images(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, w := range workloads() {
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: cp.namespace, Name: w.GetName()}, w); err != nil {
			t.Fatal(err)
		}
		switch w := w.(type) {
		case *appsv1.Deployment:
			out[w.Name] = w.Spec.Template.Spec.Containers[0].Image
		case *appsv1.StatefulSet:
			out[w.Name] = w.Spec.Template.Spec.Containers[0].Image
		}
	}
	return out
}

// runsRelease reports which of the workloads named run an image of version.
func runsRelease(images map[string]string, version string, names ...string) error {
	for _, name := range names {
		if !strings.HasSuffix(images[name], ":"+version) {
			return fmt.Errorf("%s runs %s, not release %s", name, images[name], version)
		}
	}
	return nil
}

// holdsFor fails the test if check fails at any time within d.
func holdsFor(t *testing.T, d time.Duration, what string, check func() error) {
	t.Helper()
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if err := check(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
}

// TestUpgradeRollsOutOneLayerAtATime: a new release reaches etcd first;
// the kube-apiserver only once etcd runs it, and the controller manager
// and scheduler only once the kube-apiserver does. The control plane
// reports the new version only when every component runs it.
func TestUpgradeRollsOutOneLayerAtATime(t *testing.T) {
	cp := start(t, options{})
	cp.awaitPKI(t)
	cp.rollOutAll(t)
	cp.awaitAvailable(t)
	if hcp := cp.get(t); hcp.Status.Version != "4.17.0" || !hcp.Status.Ready {
		t.Fatalf("before the upgrade: version %q, ready %v", hcp.Status.Version, hcp.Status.Ready)
	}
	v2, _ := cp.registry.PushRelease(t, "ocp-release:4.17.1", "4.17.1", map[string]string{
		"etcd":       cp.registry.Host() + "/etcd:4.17.1",
		"hyperkube":  cp.registry.Host() + "/hyperkube:4.17.1",
		"hypershift": cp.registry.Host() + "/hypershift:4.17.1",
	})
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		hcp := cp.get(t)
		hcp.Spec.ReleaseImage = v2
		return env.Client.Update(t.Context(), hcp)
	})
	if err != nil {
		t.Fatal(err)
	}
	notDone := func() error {
		if hcp := cp.get(t); hcp.Status.Version != "4.17.0" || hcp.Status.Ready {
			return fmt.Errorf("the control plane reports version %q, ready %v, before every component runs 4.17.1", hcp.Status.Version, hcp.Status.Ready)
		}
		return nil
	}

	layers := []struct {
		rolled, next, waiting []string
	}{
		{next: []string{etcd.Name}, waiting: []string{kubeapiserver.Name, kubecontrollermanager.Name, kubescheduler.Name}},
		{rolled: []string{etcd.Name}, next: []string{kubeapiserver.Name}, waiting: []string{kubecontrollermanager.Name, kubescheduler.Name}},
		{rolled: []string{kubeapiserver.Name}, next: []string{kubecontrollermanager.Name, kubescheduler.Name}},
	}
	for _, layer := range layers {
		for _, name := range layer.rolled {
			cp.rollOut(t, workloadNamed(name))
		}
		testutil.Eventually(t, 30*time.Second, func() error { return runsRelease(cp.images(t), "4.17.1", layer.next...) })
		holdsFor(t, 2*time.Second, "while "+strings.Join(layer.next, ", ")+" rolls out", func() error {
			if err := runsRelease(cp.images(t), "4.17.0", layer.waiting...); err != nil {
				return err
			}
			return notDone()
		})
		t.Logf("%s run 4.17.1; %s still run 4.17.0", strings.Join(layer.next, ", "), strings.Join(layer.waiting, ", "))
	}
	cp.rollOut(t, workloadNamed(kubecontrollermanager.Name))
	cp.rollOut(t, workloadNamed(kubescheduler.Name))
	testutil.Eventually(t, 30*time.Second, func() error {
		if hcp := cp.get(t); hcp.Status.Version != "4.17.1" || !hcp.Status.Ready || hcp.Status.ReleaseImage != v2 {
			return fmt.Errorf("version %q, ready %v, release %s", hcp.Status.Version, hcp.Status.Ready, hcp.Status.ReleaseImage)
		}
		return nil
	})
}

func workloadNamed(name string) client.Object {
	for _, w := range workloads() {
		if w.GetName() == name {
			return w
		}
	}
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name}}
}
