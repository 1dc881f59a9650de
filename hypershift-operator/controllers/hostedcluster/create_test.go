package hostedcluster_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/testutil"
)

const converge = 30 * time.Second

// TestCreate checks every object the HO applies for a new HostedCluster.
func TestCreate(t *testing.T) {
	startOperator(t, nil)
	c := newCluster(t, "4.17.0", func(hc *hyperv1.HostedCluster) {
		hc.Spec.ControllerAvailabilityPolicy = hyperv1.HighlyAvailable
		hc.Spec.InfraID = "demo-x7k2p"
	})
	ns := c.controlPlaneNamespace()
	clusterKey := c.hc.Namespace + "/" + c.hc.Name

	t.Run("the control-plane namespace is labelled, restricted and linked", func(t *testing.T) {
		testutil.Eventually(t, converge, func() error {
			got := &corev1.Namespace{}
			if err := env.Client.Get(t.Context(), client.ObjectKey{Name: ns}, got); err != nil {
				return err
			}
			for key, want := range map[string]string{
				hyperv1.HostedControlPlaneLabel:      "true",
				"pod-security.kubernetes.io/enforce": "restricted",
				"pod-security.kubernetes.io/audit":   "restricted",
				"pod-security.kubernetes.io/warn":    "restricted",
			} {
				if got.Labels[key] != want {
					return fmt.Errorf("label %s = %q, want %q", key, got.Labels[key], want)
				}
			}
			if got.Annotations[hyperv1.ClusterAnnotation] != clusterKey {
				return fmt.Errorf("annotation %s = %q", hyperv1.ClusterAnnotation, got.Annotations[hyperv1.ClusterAnnotation])
			}
			return nil
		})
	})

	t.Run("the HostedControlPlane carries the spec and the resolved release", func(t *testing.T) {
		testutil.Eventually(t, converge, func() error {
			hcp := &hyperv1.HostedControlPlane{}
			if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: c.hc.Name}, hcp); err != nil {
				return err
			}
			switch {
			case hcp.Spec.ReleaseImage != c.pin(t, c.hc.Spec.Release.Image):
				return fmt.Errorf("releaseImage = %q", hcp.Spec.ReleaseImage)
			case hcp.Spec.ControllerAvailabilityPolicy != hyperv1.HighlyAvailable:
				return fmt.Errorf("controllerAvailabilityPolicy = %q", hcp.Spec.ControllerAvailabilityPolicy)
			case hcp.Spec.InfraID != "demo-x7k2p":
				return fmt.Errorf("infraID = %q", hcp.Spec.InfraID)
			case hcp.Spec.PullSecret.Name != "pull-secret":
				return fmt.Errorf("pullSecret = %q", hcp.Spec.PullSecret.Name)
			case hcp.Annotations[hyperv1.ClusterAnnotation] != clusterKey:
				return fmt.Errorf("annotation %s missing", hyperv1.ClusterAnnotation)
			}
			return nil
		})
	})

	t.Run("the pull secret is copied next to the CPO", func(t *testing.T) {
		testutil.Eventually(t, converge, func() error {
			secret := &corev1.Secret{}
			if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "pull-secret"}, secret); err != nil {
				return err
			}
			if secret.Type != corev1.SecretTypeDockerConfigJson || len(secret.Data[corev1.DockerConfigJsonKey]) == 0 {
				return fmt.Errorf("secret is %s with %d bytes", secret.Type, len(secret.Data[corev1.DockerConfigJsonKey]))
			}
			return nil
		})
	})

	t.Run("the CPO ServiceAccount, Role with leases, and RoleBinding exist", func(t *testing.T) {
		testutil.Eventually(t, converge, func() error {
			if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "control-plane-operator"}, &corev1.ServiceAccount{}); err != nil {
				return err
			}
			role := &rbacv1.Role{}
			if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "control-plane-operator"}, role); err != nil {
				return err
			}
			var create, update bool
			for _, rule := range role.Rules {
				if slices.Contains(rule.APIGroups, "coordination.k8s.io") && slices.Contains(rule.Resources, "leases") {
					create = create || slices.Contains(rule.Verbs, "create")
					update = update || (slices.Contains(rule.Verbs, "update") && slices.Equal(rule.ResourceNames, []string{hyperv1.ControlPlaneOperatorLeaseName}))
				}
			}
			if !create || !update {
				return fmt.Errorf("role lacks lease create (%v) or update on the CPO Lease (%v): %+v", create, update, role.Rules)
			}
			binding := &rbacv1.RoleBinding{}
			if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "control-plane-operator"}, binding); err != nil {
				return err
			}
			if len(binding.Subjects) != 1 || binding.Subjects[0].Kind != "ServiceAccount" || binding.Subjects[0].Name != "control-plane-operator" {
				return fmt.Errorf("binding subjects %+v", binding.Subjects)
			}
			return nil
		})
	})

	t.Run("the CPO Deployment runs the payload's image with election and Recreate", func(t *testing.T) {
		testutil.Eventually(t, converge, func() error {
			d := &appsv1.Deployment{}
			if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "control-plane-operator"}, d); err != nil {
				return err
			}
			return checkDeployment(d, c.cpoImage("4.17.0"), c.pin(t, c.hc.Spec.Release.Image), 2)
		})
	})

	t.Run("status says the release is valid and the rollout is under way", func(t *testing.T) {
		testutil.Eventually(t, converge, func() error {
			hc := c.get(t)
			if !slices.Contains(hc.Finalizers, hyperv1.Finalizer) {
				return fmt.Errorf("finalizers %v", hc.Finalizers)
			}
			for _, want := range []struct {
				condition string
				status    metav1.ConditionStatus
			}{
				{hyperv1.ValidReleaseImage, metav1.ConditionTrue},
				{hyperv1.ValidConfiguration, metav1.ConditionTrue},
				{hyperv1.ReconciliationSucceeded, metav1.ConditionTrue},
				{hyperv1.ReconciliationActive, metav1.ConditionTrue},
				{hyperv1.Progressing, metav1.ConditionTrue},
				{hyperv1.Available, metav1.ConditionFalse},
			} {
				if err := checkCondition(hc, want.condition, want.status); err != nil {
					return err
				}
			}
			v := hc.Status.Version
			if v == nil || v.Desired.Version != "4.17.0" || len(v.History) != 1 || v.History[0].State != configv1.PartialUpdate {
				return fmt.Errorf("version %+v", v)
			}
			return nil
		})
	})
}

// TestControlPlaneOperatorImageOverride checks the annotation wins over the
// payload's hypershift image.
func TestControlPlaneOperatorImageOverride(t *testing.T) {
	startOperator(t, nil)
	const override = "quay.io/example/control-plane-operator:custom"
	c := newCluster(t, "4.17.0", func(hc *hyperv1.HostedCluster) {
		hc.Annotations = map[string]string{hyperv1.ControlPlaneOperatorImageAnnotation: override}
	})
	testutil.Eventually(t, converge, func() error {
		d := &appsv1.Deployment{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: c.controlPlaneNamespace(), Name: "control-plane-operator"}, d); err != nil {
			return err
		}
		return checkDeployment(d, override, c.pin(t, c.hc.Spec.Release.Image), 1)
	})
}

func checkDeployment(d *appsv1.Deployment, image, releaseImage string, replicas int32) error {
	container := d.Spec.Template.Spec.Containers[0]
	args := strings.Join(container.Args, " ")
	env := map[string]string{}
	for _, e := range container.Env {
		env[e.Name] = e.Value
	}
	switch {
	case container.Image != image:
		return fmt.Errorf("image = %q, want %q", container.Image, image)
	case d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType:
		return fmt.Errorf("strategy = %q, want Recreate", d.Spec.Strategy.Type)
	case *d.Spec.Replicas != replicas:
		return fmt.Errorf("replicas = %d, want %d", *d.Spec.Replicas, replicas)
	case !strings.Contains(args, "--leader-elect=true") || !strings.Contains(args, "--leader-elect-resource-name="+hyperv1.ControlPlaneOperatorLeaseName):
		return fmt.Errorf("args %q lack leader election", args)
	case env["OPERATE_ON_RELEASE_IMAGE"] != releaseImage:
		return fmt.Errorf("OPERATE_ON_RELEASE_IMAGE = %q, want %q", env["OPERATE_ON_RELEASE_IMAGE"], releaseImage)
	}
	return nil
}

func checkCondition(hc *hyperv1.HostedCluster, conditionType string, status metav1.ConditionStatus) error {
	c := meta.FindStatusCondition(hc.Status.Conditions, conditionType)
	if c == nil {
		return fmt.Errorf("condition %s is missing", conditionType)
	}
	if c.Status != status {
		return fmt.Errorf("condition %s is %s (%s: %s), want %s", conditionType, c.Status, c.Reason, c.Message, status)
	}
	if c.ObservedGeneration != hc.Generation {
		return fmt.Errorf("condition %s observed generation %d, want %d", conditionType, c.ObservedGeneration, hc.Generation)
	}
	return nil
}
