package hostedcluster_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/controllers/hostedcluster"
	"github.com/hypershift-le/hypershift/support/releaseinfo"
	"github.com/hypershift-le/hypershift/support/testutil"
)

// fastRecheck asks the registry again every second which payload a tag
// names, so that a moved tag is noticed within the test.
func fastRecheck(r *hostedcluster.Reconciler) { r.ReleaseRecheckInterval = time.Second }

// checkRunsPayload fails unless the HostedControlPlane, the CPO Deployment
// (its OPERATE_ON_RELEASE_IMAGE and its image, the payload's hypershift
// image) and status.version.desired name the payload pinned, of version.
func checkRunsPayload(t *testing.T, c *cluster, pinned, version string) error {
	t.Helper()
	hcp := &hyperv1.HostedControlPlane{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: c.controlPlaneNamespace(), Name: c.hc.Name}, hcp); err != nil {
		return err
	}
	if hcp.Spec.ReleaseImage != pinned {
		return fmt.Errorf("HostedControlPlane spec.releaseImage = %q, want %q", hcp.Spec.ReleaseImage, pinned)
	}
	d := &appsv1.Deployment{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: c.controlPlaneNamespace(), Name: hyperv1.ControlPlaneOperatorName}, d); err != nil {
		return err
	}
	if err := checkDeployment(d, c.cpoImage(version), pinned, 1); err != nil {
		return err
	}
	hc := c.get(t)
	if v := hc.Status.Version; v == nil || v.Desired.Image != pinned || v.Desired.Version != version || v.RequestedImage != hc.Spec.Release.Image {
		return fmt.Errorf("status.version = %+v, want desired %s (%s) requested as %s", v, pinned, version, hc.Spec.Release.Image)
	}
	return nil
}

// checkTagMoved fails unless ReleaseImageTagMoved has status and its
// message says each of says.
func checkTagMoved(hc *hyperv1.HostedCluster, status metav1.ConditionStatus, says ...string) error {
	cond := meta.FindStatusCondition(hc.Status.Conditions, hyperv1.ReleaseImageTagMoved)
	if cond == nil || cond.Status != status {
		return fmt.Errorf("%s = %+v, want %s", hyperv1.ReleaseImageTagMoved, cond, status)
	}
	for _, s := range says {
		if !strings.Contains(cond.Message, s) {
			return fmt.Errorf("%s's message %q does not say %q", hyperv1.ReleaseImageTagMoved, cond.Message, s)
		}
	}
	return nil
}

// TestReleaseImagePinning pushes a payload under a tag, creates the
// cluster, and re-pushes another payload under the same tag: the control
// plane stays on the first until the user accepts the second.
func TestReleaseImagePinning(t *testing.T) {
	_, stop := startStoppableOperator(t, fastRecheck)
	c := newCluster(t, "4.17.0", nil)
	tag := c.hc.Spec.Release.Image
	first := c.pin(t, tag)

	t.Run("the control plane is given the payload the HO read, pinned by digest", func(t *testing.T) {
		testutil.Eventually(t, converge, func() error {
			if err := checkRunsPayload(t, c, first, "4.17.0"); err != nil {
				return err
			}
			hc := c.get(t)
			if h := hc.Status.Version.History; len(h) != 1 || h[0].Image != first {
				return fmt.Errorf("history %+v, want one entry for %s", h, first)
			}
			return checkTagMoved(hc, metav1.ConditionFalse, releaseinfo.DigestOf(first))
		})
		awaitEvent(t, c.hc, corev1.EventTypeNormal, hostedcluster.ReleaseImagePinnedReason, first)
	})

	t.Run("kubectl get hc -o wide shows the tag as typed and the pinned payload", func(t *testing.T) {
		table := hostedClusterTable(t, c.hc.Namespace, c.hc.Name)
		cells := map[string]any{}
		for i, col := range table.ColumnDefinitions {
			if len(table.Rows) == 1 {
				cells[col.Name] = table.Rows[0].Cells[i]
			}
		}
		if cells["Release"] != tag || cells["Pinned"] != first {
			t.Errorf("RELEASE = %v, PINNED = %v; want %s and %s", cells["Release"], cells["Pinned"], tag, first)
		}
	})

	// Let the passes that follow the creation end: what notices the move
	// below is the recheck.
	time.Sleep(5 * time.Second)
	c.pushReleaseAs(t, "4.17.0", "4.17.1")
	second := c.pin(t, tag)
	if second == first {
		t.Fatal("the second push did not move the tag")
	}
	newDigest := releaseinfo.DigestOf(second)

	t.Run("when the tag moves, the HO notices on its next recheck and reports it", func(t *testing.T) {
		testutil.Eventually(t, 10*time.Second, func() error {
			return checkTagMoved(c.get(t), metav1.ConditionTrue, newDigest, first, hyperv1.AcceptReleaseDigestAnnotation+"="+newDigest)
		})
		awaitEvent(t, c.hc, corev1.EventTypeWarning, hyperv1.ReleaseImageTagMoved, newDigest)
	})

	t.Run("when the tag has moved, the control plane keeps the first payload", func(t *testing.T) {
		time.Sleep(3 * time.Second) // three rechecks
		if err := checkRunsPayload(t, c, first, "4.17.0"); err != nil {
			t.Fatal(err)
		}
	})

	parent := t
	t.Run("when the operator restarts, it keeps the pin", func(t *testing.T) {
		stop()
		// Until the whole test ends: it rolls out what is accepted below.
		startOperator(parent, fastRecheck)
		time.Sleep(3 * time.Second)
		if err := checkRunsPayload(t, c, first, "4.17.0"); err != nil {
			t.Fatal(err)
		}
		if err := checkTagMoved(c.get(t), metav1.ConditionTrue, newDigest); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("when the annotation names a digest the tag does not name, nothing rolls out", func(t *testing.T) {
		c.update(t, func(hc *hyperv1.HostedCluster) {
			metav1.SetMetaDataAnnotation(&hc.ObjectMeta, hyperv1.AcceptReleaseDigestAnnotation, "sha256:"+strings.Repeat("0", 64))
		})
		time.Sleep(3 * time.Second)
		if err := checkRunsPayload(t, c, first, "4.17.0"); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("when the user accepts the new digest, it rolls out", func(t *testing.T) {
		c.update(t, func(hc *hyperv1.HostedCluster) {
			metav1.SetMetaDataAnnotation(&hc.ObjectMeta, hyperv1.AcceptReleaseDigestAnnotation, newDigest)
		})
		testutil.Eventually(t, converge, func() error {
			if err := checkRunsPayload(t, c, second, "4.17.1"); err != nil {
				return err
			}
			hc := c.get(t)
			if h := hc.Status.Version.History; len(h) != 2 || h[0].Image != second || h[1].Image != first {
				return fmt.Errorf("history %+v, want %s then %s", h, second, first)
			}
			return checkTagMoved(hc, metav1.ConditionFalse, newDigest)
		})
		awaitEvent(t, c.hc, corev1.EventTypeNormal, hostedcluster.ReleaseImagePinnedReason, second)
	})
}

// TestReleaseImageNamedByDigest: a spec that names a digest is the pin,
// kept as written, and a tag it also names moving changes nothing.
func TestReleaseImageNamedByDigest(t *testing.T) {
	startOperator(t, fastRecheck)
	c := newCluster(t, "4.17.0", func(hc *hyperv1.HostedCluster) {
		release, err := releaseinfo.NewRegistryProvider().Lookup(t.Context(), hc.Spec.Release.Image, nil)
		if err != nil {
			t.Fatal(err)
		}
		hc.Spec.Release.Image += "@" + release.Digest
	})
	spec := c.hc.Spec.Release.Image
	testutil.Eventually(t, converge, func() error {
		if err := checkRunsPayload(t, c, spec, "4.17.0"); err != nil {
			return err
		}
		return checkTagMoved(c.get(t), metav1.ConditionFalse, "names a digest")
	})

	c.pushReleaseAs(t, "4.17.0", "4.17.1")
	time.Sleep(3 * time.Second)
	if err := checkRunsPayload(t, c, spec, "4.17.0"); err != nil {
		t.Fatal(err)
	}
	if err := checkTagMoved(c.get(t), metav1.ConditionFalse, "names a digest"); err != nil {
		t.Fatal(err)
	}
}
