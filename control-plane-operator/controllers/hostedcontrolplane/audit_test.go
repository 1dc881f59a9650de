package hostedcontrolplane

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/control-plane-operator/component"
	"github.com/hypershift-le/hypershift/control-plane-operator/components/etcd"
	"github.com/hypershift-le/hypershift/control-plane-operator/components/kubeapiserver"
	"github.com/hypershift-le/hypershift/support/testutil"
)

// TestAuditProfileChangeRollsTheKubeAPIServer: the operator applies the
// audit policy of the HostedControlPlane's profile (and puts a deleted
// one back), and a new profile changes the kube-apiserver's pod template,
// which rolls its pods; None takes the audit flags and the audit-logs
// container away.
func TestAuditProfileChangeRollsTheKubeAPIServer(t *testing.T) {
	cp := start(t, options{})
	cp.awaitPKI(t)
	cp.rollOut(t, workloadNamed(etcd.Name))

	before := cp.awaitAudit(t, configv1.DefaultAuditProfileType, true, "")

	policy := &corev1.ConfigMap{}
	key := client.ObjectKey{Namespace: cp.namespace, Name: kubeapiserver.AuditConfigMap}
	if err := env.Client.Get(t.Context(), key, policy); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(t.Context(), policy); err != nil {
		t.Fatal(err)
	}
	cp.awaitAudit(t, configv1.DefaultAuditProfileType, true, "")

	cp.setAuditProfile(t, configv1.WriteRequestBodiesAuditProfileType)
	// The ConfigMap is applied before the Deployment, in the same pass:
	// the pod template's hash must follow within the wait.
	cp.awaitAudit(t, configv1.WriteRequestBodiesAuditProfileType, true, before)

	cp.setAuditProfile(t, configv1.NoneAuditProfileType)
	cp.awaitAudit(t, configv1.NoneAuditProfileType, false, "")
}

func (cp *controlPlane) setAuditProfile(t *testing.T, profile configv1.AuditProfileType) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		hcp := cp.get(t)
		hcp.Spec.Configuration = &hyperv1.ClusterConfiguration{APIServer: &configv1.APIServerSpec{Audit: configv1.Audit{Profile: profile}}}
		return env.Client.Update(t.Context(), hcp)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// awaitAudit waits for the audit policy ConfigMap of profile and a
// kube-apiserver Deployment that writes an audit log, or not, whose pod
// template's configuration hash is not notHash, and returns that hash.
func (cp *controlPlane) awaitAudit(t *testing.T, profile configv1.AuditProfileType, logs bool, notHash string) string {
	t.Helper()
	var hash string
	testutil.Eventually(t, 30*time.Second, func() error {
		policy := &corev1.ConfigMap{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: cp.namespace, Name: kubeapiserver.AuditConfigMap}, policy); err != nil {
			return err
		}
		if got := policy.Data[kubeapiserver.AuditProfileKey]; got != string(profile) {
			return fmt.Errorf("the audit policy is of profile %q, not %q", got, profile)
		}
		d := &appsv1.Deployment{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: cp.namespace, Name: kubeapiserver.Name}, d); err != nil {
			return err
		}
		pod := d.Spec.Template.Spec
		flag := slices.ContainsFunc(pod.Containers[0].Args, func(a string) bool { return strings.HasPrefix(a, "--audit-policy-file=") })
		sidecar := slices.ContainsFunc(pod.Containers, func(c corev1.Container) bool { return c.Name == kubeapiserver.AuditLogsContainer })
		if flag != logs || sidecar != logs {
			return fmt.Errorf("audit flag %t, audit-logs container %t; want %t", flag, sidecar, logs)
		}
		hash = d.Spec.Template.Annotations[component.ConfigHashAnnotation]
		if hash == notHash {
			return fmt.Errorf("the pod template's %s is still %s", component.ConfigHashAnnotation, notHash)
		}
		return nil
	})
	return hash
}
