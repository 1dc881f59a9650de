package hostedcluster_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/testutil"
)

// publishKubeconfig does what the control-plane-operator does once its
// control plane runs: it writes the admin kubeconfig Secret and reports it,
// with the endpoint, in the HostedControlPlane's status.
func publishKubeconfig(t *testing.T, c *cluster, kubeconfig string, endpoint hyperv1.APIEndpoint) {
	t.Helper()
	ns := c.controlPlaneNamespace()
	source := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: hyperv1.AdminKubeconfigSecretName,
			Annotations: map[string]string{hyperv1.ClusterAnnotation: c.hc.Namespace + "/" + c.hc.Name}},
		Data: map[string][]byte{hyperv1.KubeconfigKey: []byte(kubeconfig)},
	}
	if err := env.Client.Create(t.Context(), source); apierrors.IsAlreadyExists(err) {
		err = env.Client.Update(t.Context(), source)
		if err != nil {
			t.Fatal(err)
		}
	} else if err != nil {
		t.Fatal(err)
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		hcp := &hyperv1.HostedControlPlane{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: c.hc.Name}, hcp); err != nil {
			return err
		}
		hcp.Status.KubeConfig = &hyperv1.KubeconfigSecretRef{Name: source.Name, Key: hyperv1.KubeconfigKey}
		hcp.Status.ControlPlaneEndpoint = &endpoint
		return env.Client.Status().Update(t.Context(), hcp)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// awaitCopy waits until the HostedCluster's namespace holds the admin
// kubeconfig copy with kubeconfig in it, and status names it.
func awaitCopy(t *testing.T, c *cluster, kubeconfig string) {
	t.Helper()
	awaitCopyWithin(t, c, kubeconfig, converge)
}

func awaitCopyWithin(t *testing.T, c *cluster, kubeconfig string, within time.Duration) {
	t.Helper()
	testutil.Eventually(t, within, func() error {
		copied := &corev1.Secret{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: c.hc.Namespace, Name: c.hc.Name + "-admin-kubeconfig"}, copied); err != nil {
			return err
		}
		if !bytes.Equal(copied.Data["kubeconfig"], []byte(kubeconfig)) {
			return fmt.Errorf("the copy holds %q", copied.Data["kubeconfig"])
		}
		if ref := c.get(t).Status.KubeConfig; ref == nil || ref.Name != c.hc.Name+"-admin-kubeconfig" {
			return fmt.Errorf("status.kubeconfig = %+v", ref)
		}
		return nil
	})
}

// TestAdminKubeconfigAndEndpoint: the HostedControlPlane gets spec.services;
// once the control plane publishes its admin kubeconfig and endpoint, the
// HostedCluster's namespace holds a copy named <name>-admin-kubeconfig,
// status names it and shows the endpoint; a re-issued kubeconfig and a
// tampered copy are copied again; a converged cluster costs no write; and
// the copy goes with the HostedCluster.
func TestAdminKubeconfigAndEndpoint(t *testing.T) {
	ho := startOperator(t, nil)
	services := []hyperv1.ServicePublishingStrategyMapping{{Service: hyperv1.APIServer, ServicePublishingStrategy: hyperv1.ServicePublishingStrategy{
		Type: hyperv1.NodePort, NodePort: &hyperv1.NodePortPublishingStrategy{Address: "127.0.0.1", Port: 30443},
	}}}
	c := newCluster(t, "4.17.0", func(hc *hyperv1.HostedCluster) { hc.Spec.Services = services })
	hcp := awaitControlPlane(t, c)
	if diff := cmp.Diff(services, hcp.Spec.Services); diff != "" {
		t.Errorf("the HostedControlPlane's spec.services (-want +got):\n%s", diff)
	}
	if c.get(t).Status.KubeConfig != nil {
		t.Error("status.kubeconfig is set before the control plane published one")
	}

	endpoint := hyperv1.APIEndpoint{Host: "127.0.0.1", Port: 30443}
	publishKubeconfig(t, c, "first", endpoint)
	awaitCopy(t, c, "first")
	testutil.Eventually(t, converge, func() error {
		if got := c.get(t).Status.ControlPlaneEndpoint; got == nil || *got != endpoint {
			return fmt.Errorf("status.controlPlaneEndpoint = %+v", got)
		}
		return nil
	})

	t.Run("when the control plane re-issues its kubeconfig, the copy follows", func(t *testing.T) {
		// Let the HO go idle first: only the watch of the published
		// Secret can bring it back (the HostedControlPlane does not
		// change).
		time.Sleep(3 * time.Second)
		publishKubeconfig(t, c, "second", endpoint)
		awaitCopyWithin(t, c, "second", 5*time.Second)
	})
	t.Run("when someone changes the copy, it comes back", func(t *testing.T) {
		copied := &corev1.Secret{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: c.hc.Namespace, Name: c.hc.Name + "-admin-kubeconfig"}, copied); err != nil {
			t.Fatal(err)
		}
		copied.Data["kubeconfig"] = []byte("tampered")
		if err := env.Client.Update(t.Context(), copied); err != nil {
			t.Fatal(err)
		}
		awaitCopy(t, c, "second")
	})
	t.Run("when converged, the HO writes nothing", func(t *testing.T) {
		time.Sleep(2 * time.Second)
		since := time.Now()
		for i := range 3 {
			c.touch(t, i)
			time.Sleep(time.Second)
		}
		time.Sleep(time.Second)
		if writes := writesBy(t, ho, since, c.hc.Namespace, c.controlPlaneNamespace()); len(writes) != 0 {
			t.Fatalf("a converged HostedCluster got %d writes from the HO:%s", len(writes), describe(writes))
		}
	})
	t.Run("when the HostedCluster is deleted, the copy goes with it", func(t *testing.T) {
		if err := env.Client.Delete(t.Context(), c.get(t)); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 2*converge, func() error {
			err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: c.hc.Namespace, Name: c.hc.Name + "-admin-kubeconfig"}, &corev1.Secret{})
			if !apierrors.IsNotFound(err) {
				return fmt.Errorf("the copy is still there (%w)", err)
			}
			return nil
		})
	})
}
