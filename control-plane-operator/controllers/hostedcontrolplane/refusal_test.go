package hostedcontrolplane

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/control-plane-operator/components/kubescheduler"
	"github.com/hypershift-le/hypershift/support/testutil"
	"github.com/hypershift-le/hypershift/test/testenv"
)

// TestARefusedObjectIsReportedAndClearsByItself: the API server refuses the
// kube-apiserver's Service (its node port is taken, or outside the range)
// or a workload (an admission policy): the HostedControlPlane says so at
// once, in the API server's words, with one Warning event, and the report
// clears by itself once the cause is gone.
func TestARefusedObjectIsReportedAndClearsByItself(t *testing.T) {
	t.Run("when another Service holds the node port", func(t *testing.T) {
		holder := holdNodePort(t, env.Namespace(t), 30611)
		cp := start(t, options{services: hyperv1.NodePortServices("127.0.0.1", 30611)})
		want := `Refused by the management cluster's API server: Service "kube-apiserver" is invalid: spec.ports[0].nodePort: Invalid value: 30611: provided port is already allocated`
		cp.awaitRefusal(t, want)
		cp.awaitEvent(t, corev1.EventTypeWarning, want)
		// Retried with a backoff, not in a hot loop; one event for the
		// refusal, however often it is retried.
		time.Sleep(5 * time.Second)
		if n := env.CountEvents(t, cp.hcp, hyperv1.RefusedByAPIServerReason); n != 1 {
			t.Errorf("%d RefusedByAPIServer events, want 1", n)
		}
		if err := env.Client.Delete(t.Context(), holder); err != nil {
			t.Fatal(err)
		}
		cp.awaitValidConfiguration(t, 90*time.Second)
	})
	t.Run("when the node port is outside the management cluster's range", func(t *testing.T) {
		cp := start(t, options{services: hyperv1.NodePortServices("127.0.0.1", 80)})
		cp.awaitRefusal(t, `Refused by the management cluster's API server: Service "kube-apiserver" is invalid: spec.ports[0].nodePort: Invalid value: 80: provided port is not in the valid range. The range of valid ports is 30000-32767`)
	})
	t.Run("when an admission policy forbids a workload", func(t *testing.T) {
		ns := env.Namespace(t)
		policy := forbidSchedulers(t, ns)
		cp := startIn(t, ns, options{})
		want := `Refused by the management cluster's API server: deployments.apps "kube-scheduler" is forbidden: ValidatingAdmissionPolicy '` + policy +
			`' with binding '` + policy + `' denied request: no scheduler may run here`
		// The scheduler comes once what it depends on has rolled out.
		for _, w := range workloads()[:3] {
			cp.rollOut(t, w)
		}
		testutil.Eventually(t, 60*time.Second, func() error {
			hcp := cp.get(t)
			c := meta.FindStatusCondition(hcp.Status.Conditions, ComponentAvailable(kubescheduler.Name))
			if c == nil || c.Reason != hyperv1.RefusedByAPIServerReason || c.Message != want {
				return fmt.Errorf("KubeSchedulerAvailable = %+v", c)
			}
			return checkCondition(hcp, hyperv1.ValidConfiguration, hyperv1.RefusedByAPIServerReason, want)
		})
	})
}

// awaitRefusal waits until ValidConfiguration and Available are False with
// reason RefusedByAPIServer and message want.
func (cp *controlPlane) awaitRefusal(t *testing.T, want string) {
	t.Helper()
	testutil.Eventually(t, 30*time.Second, func() error {
		hcp := cp.get(t)
		if err := checkCondition(hcp, hyperv1.ValidConfiguration, hyperv1.RefusedByAPIServerReason, want); err != nil {
			return err
		}
		return checkCondition(hcp, hyperv1.Available, hyperv1.RefusedByAPIServerReason, want)
	})
}

// awaitValidConfiguration waits until ValidConfiguration is True.
func (cp *controlPlane) awaitValidConfiguration(t *testing.T, timeout time.Duration) {
	t.Helper()
	testutil.Eventually(t, timeout, func() error {
		if c := meta.FindStatusCondition(cp.get(t).Status.Conditions, hyperv1.ValidConfiguration); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("ValidConfiguration = %+v", c)
		}
		return nil
	})
}

func checkCondition(hcp *hyperv1.HostedControlPlane, conditionType, reason, message string) error {
	c := meta.FindStatusCondition(hcp.Status.Conditions, conditionType)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != reason || c.Message != message || c.ObservedGeneration != hcp.Generation {
		return fmt.Errorf("%s = %+v, want False (%s) %q at generation %d", conditionType, c, reason, message, hcp.Generation)
	}
	return nil
}

// holdNodePort creates a NodePort Service on port in ns, as another user of
// the management cluster would.
func holdNodePort(t *testing.T, ns string, port int32) *corev1.Service {
	t.Helper()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "holder"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Selector: map[string]string{"app": "holder"}, Ports: []corev1.ServicePort{{
			Port: 443, TargetPort: intstr.FromInt32(443), NodePort: port,
		}}},
	}
	if err := env.Client.Create(t.Context(), svc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(t.Context(), svc) })
	return svc
}

// forbidSchedulers makes an admission policy refuse the kube-scheduler
// Deployment in ns, and returns its name.
func forbidSchedulers(t *testing.T, ns string) string {
	t.Helper()
	labels := map[string]string{"app": "probe"}
	probe := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: kubescheduler.Name},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "probe", Image: "example.com/probe:1"}}},
			},
		},
	}
	return env.Refuse(t, testenv.Refusal{Group: "apps", Resource: "deployments", Name: kubescheduler.Name, Namespace: ns, Message: "no scheduler may run here"}, probe)
}
