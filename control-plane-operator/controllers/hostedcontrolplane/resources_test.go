package hostedcontrolplane

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/control-plane-operator/components/etcd"
	"github.com/hypershift-le/hypershift/control-plane-operator/components/kubeapiserver"
	"github.com/hypershift-le/hypershift/support/testutil"
)

// TestResourceOverrides: HyperShift's resource-request-override annotation
// on the HostedControlPlane (the hypershift-operator copies it from the
// HostedCluster) changes the kube-apiserver's requests; one that does not
// parse sets ValidConfiguration=False naming it, and goes away with it.
func TestResourceOverrides(t *testing.T) {
	cp := start(t, options{})
	cp.awaitPKI(t)
	cp.rollOut(t, workloadNamed(etcd.Name))
	key := hyperv1.ResourceRequestOverrideAnnotationPrefix + "/" + kubeapiserver.Name + "." + kubeapiserver.Name

	cp.annotate(t, key, "memory=640Mi")
	testutil.Eventually(t, 30*time.Second, func() error {
		d := &appsv1.Deployment{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: cp.namespace, Name: kubeapiserver.Name}, d); err != nil {
			return err
		}
		if m := d.Spec.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory]; m.String() != "640Mi" {
			return fmt.Errorf("the kube-apiserver requests %s of memory, want 640Mi", &m)
		}
		return nil
	})

	cp.annotate(t, key, "memory=plenty")
	validConfiguration := func(want metav1.ConditionStatus, words string) func() error {
		return func() error {
			c := meta.FindStatusCondition(cp.get(t).Status.Conditions, hyperv1.ValidConfiguration)
			if c == nil || c.Status != want || !strings.Contains(c.Message, words) {
				return fmt.Errorf("ValidConfiguration %+v, want %s saying %q", c, want, words)
			}
			return nil
		}
	}
	testutil.Eventually(t, 30*time.Second, validConfiguration(metav1.ConditionFalse, key))
	cp.annotate(t, key, "")
	testutil.Eventually(t, 30*time.Second, validConfiguration(metav1.ConditionTrue, ""))
}

// annotate sets annotation key of the HostedControlPlane to value, or
// removes it when value is empty.
func (cp *controlPlane) annotate(t *testing.T, key, value string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		hcp := cp.get(t)
		if value == "" {
			delete(hcp.Annotations, key)
		} else {
			metav1.SetMetaDataAnnotation(&hcp.ObjectMeta, key, value)
		}
		return env.Client.Update(t.Context(), hcp)
	})
	if err != nil {
		t.Fatal(err)
	}
}
