package hostedcontrolplane

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hypershift-le/hypershift/control-plane-operator/components/etcd"
	"github.com/hypershift-le/hypershift/support/testutil"
)

// TestAClaimThatCannotBindIsNamed: etcd's pods cannot start while a claim
// is not bound; its condition names the claim, without a hot loop, and
// says so no more once the claim is bound.
func TestAClaimThatCannotBindIsNamed(t *testing.T) {
	cp := start(t, options{})
	cp.awaitPKI(t)
	testutil.Eventually(t, 30*time.Second, func() error {
		return env.Client.Get(t.Context(), client.ObjectKey{Namespace: cp.namespace, Name: etcd.Name}, &appsv1.StatefulSet{})
	})
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: cp.namespace, Name: "data-etcd-0", Labels: map[string]string{"app": etcd.Name, "hypershift.openshift.io/control-plane-component": etcd.Name}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: ptr.To("no-such-class"),
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("8Gi")}},
		},
	}
	if err := env.Client.Create(t.Context(), claim); err != nil {
		t.Fatal(err)
	}
	condition := func() *metav1.Condition {
		return meta.FindStatusCondition(cp.get(t).Status.Conditions, ComponentAvailable(etcd.Name))
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		if c := condition(); c == nil || c.Reason != "ClaimNotBound" || !strings.Contains(c.Message, "Claim data-etcd-0 is not bound") {
			return fmt.Errorf("EtcdAvailable = %+v", c)
		}
		return nil
	})
	cp.awaitQuiet(t)

	claim.Status.Phase = corev1.ClaimBound
	if err := env.Client.Status().Update(t.Context(), claim); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		if c := condition(); c == nil || c.Reason == "ClaimNotBound" {
			return fmt.Errorf("EtcdAvailable = %+v", c)
		}
		return nil
	})
}
