package hostedcontrolplane

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/control-plane-operator/components/etcd"
	"github.com/hypershift-le/hypershift/control-plane-operator/components/kubeapiserver"
	"github.com/hypershift-le/hypershift/control-plane-operator/components/kubecontrollermanager"
	"github.com/hypershift-le/hypershift/control-plane-operator/components/kubescheduler"
	"github.com/hypershift-le/hypershift/support/releaseinfo"
	"github.com/hypershift-le/hypershift/support/testutil"
)

// TestAPayloadPinnedByDigest: the CPO reads a release image named by
// digest, as the hypershift-operator gives it, and keeps running that
// payload when the tag it was pushed under comes to name another.
func TestAPayloadPinnedByDigest(t *testing.T) {
	cp := start(t, options{pinned: true})
	pinned := cp.hcp.Spec.ReleaseImage
	if !releaseinfo.HasDigest(pinned) {
		t.Fatalf("the test's release image %s names no digest", pinned)
	}
	cp.awaitPKI(t)
	cp.rollOutAll(t)
	cp.awaitAvailable(t)
	all := []string{etcd.Name, kubeapiserver.Name, kubecontrollermanager.Name, kubescheduler.Name}
	runsFirst := func() error {
		hcp := cp.get(t)
		if hcp.Status.Version != "4.17.0" || hcp.Status.ReleaseImage != pinned {
			return fmt.Errorf("status version %q, releaseImage %q; want 4.17.0 from %s", hcp.Status.Version, hcp.Status.ReleaseImage, pinned)
		}
		if c := meta.FindStatusCondition(hcp.Status.Conditions, hyperv1.ValidReleaseImage); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("ValidReleaseImage = %+v", c)
		}
		return runsRelease(cp.images(t), "4.17.0", all...)
	}
	testutil.Eventually(t, 30*time.Second, runsFirst)

	cp.registry.PushRelease(t, "ocp-release:4.17.0", "4.17.1", map[string]string{
		"etcd":       cp.registry.Host() + "/etcd:4.17.1",
		"hyperkube":  cp.registry.Host() + "/hyperkube:4.17.1",
		"hypershift": cp.registry.Host() + "/hypershift:4.17.1",
	})
	cp.touch(t)
	holdsFor(t, 3*time.Second, "after the tag moved", runsFirst)
}
