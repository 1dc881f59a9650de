package operator_test

import (
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	horender "github.com/hypershift-le/hypershift/hypershift-operator/render"
	"github.com/hypershift-le/hypershift/support/config"
	"github.com/hypershift-le/hypershift/support/releaseinfo/releasetest"
	"github.com/hypershift-le/hypershift/test/auditlog"
	"github.com/hypershift-le/hypershift/test/operatorprocess"
	"github.com/hypershift-le/hypershift/test/testenv"
)

var (
	env    *testenv.Env
	binary string
)

// Test timings: short, and valid (4s > 3s > 1.2 * 1s).
const (
	leaseDuration = 4 * time.Second
	renewDeadline = 3 * time.Second
	retryPeriod   = time.Second
)

// TestMain builds the control-plane-operator binary from this repository and
// starts the test control plane with its audit log.
func TestMain(m *testing.M) {
	os.Exit(testenv.MainWithBinary(m, "github.com/hypershift-le/hypershift/control-plane-operator", &binary, testenv.Options{AuditLog: true}, &env))
}

// controlPlane is one control-plane namespace as the hypershift-operator
// leaves it: the HostedControlPlane, the pull secret and the CPO Role.
type controlPlane struct {
	namespace    string
	releaseImage string
	hcp          *hyperv1.HostedControlPlane
}

func newControlPlane(t *testing.T, withoutLeases bool) *controlPlane {
	t.Helper()
	registry := releasetest.NewRegistry(t)
	image, _ := registry.PushRelease(t, "ocp-release:4.17.0", "4.17.0", map[string]string{
		"hypershift": registry.Host() + "/hypershift:4.17.0",
		"etcd":       registry.Host() + "/etcd:4.17.0",
		"hyperkube":  registry.Host() + "/hyperkube:4.17.0",
	})
	ns := env.Namespace(t)
	cp := &controlPlane{namespace: ns, releaseImage: image}
	in := horender.Inputs{
		HostedCluster:               &hyperv1.HostedCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: "demo"}},
		ReleaseImage:                image,
		ControlPlaneOperatorTimings: config.DefaultControlPlaneOperatorTimings,
	}
	role := horender.ControlPlaneOperatorRole(in)
	role.Namespace = ns
	if withoutLeases {
		var rules []rbacv1.PolicyRule
		for _, rule := range role.Rules {
			if rule.Resources[0] != "leases" {
				rules = append(rules, rule)
			}
		}
		role.Rules = rules
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pull-secret"},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: registry.DockerConfigJSON("u", "p")},
	}
	cp.hcp = &hyperv1.HostedControlPlane{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "demo"},
		Spec: hyperv1.HostedControlPlaneSpec{
			ReleaseImage: image,
			Platform:     hyperv1.PlatformSpec{Type: hyperv1.NonePlatform},
			PullSecret:   hyperv1.LocalObjectReference{Name: secret.Name},
			Services:     hyperv1.NodePortServices("127.0.0.1", 0),
		},
	}
	for _, obj := range []client.Object{role, secret, cp.hcp} {
		if err := env.Client.Create(t.Context(), obj); err != nil {
			t.Fatal(err)
		}
	}
	return cp
}

// cpo is one control-plane-operator process with a user of its own.
type cpo struct {
	*operatorprocess.Process
	user string
}

// startCPO runs `control-plane-operator run` as pod, authenticated as a user
// bound to the control-plane namespace's CPO Role.
func startCPO(t *testing.T, cp *controlPlane, pod string, operateOn string, extraArgs ...string) *cpo {
	t.Helper()
	user := "cpo-" + pod
	kubeconfig, err := env.AddUserKubeconfig(user)
	if err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: cp.namespace, Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: hyperv1.ControlPlaneOperatorName},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}
	if err := env.Client.Create(t.Context(), binding); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"run",
		"--kubeconfig=" + kubeconfig,
		"--namespace=" + cp.namespace,
		"--hosted-control-plane=" + cp.hcp.Name,
		"--leader-elect-lease-duration=" + leaseDuration.String(),
		"--leader-elect-renew-deadline=" + renewDeadline.String(),
		"--leader-elect-retry-period=" + retryPeriod.String(),
		"--leader-elect-resource-name=" + hyperv1.ControlPlaneOperatorLeaseName,
		"--metrics-bind-address=0",
		// Scraped over plain HTTP (scrape); a user bound to the namespace's
		// Role alone could not authorize scrapers anyway.
		"--metrics-secure=false",
		"--health-probe-bind-address=" + operatorprocess.FreeAddress(t),
	}, extraArgs...)
	return &cpo{Process: operatorprocess.Start(t, binary, pod, args, hyperv1.OperateOnReleaseImageEnv+"="+operateOn), user: user}
}

// holder returns the Lease's holder, "" when there is none.
func holder(t *testing.T, cp *controlPlane) string {
	return env.Holder(t, cp.namespace, hyperv1.ControlPlaneOperatorLeaseName)
}

// awaitHolder waits until one of pods holds the Lease and returns it.
func awaitHolder(t *testing.T, cp *controlPlane, timeout time.Duration, pods ...string) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		h := holder(t, cp)
		for _, pod := range pods {
			if h == pod {
				return h
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("none of %v held the Lease within %s (holder %q)", pods, timeout, holder(t, cp))
	return ""
}

// successfulWrites returns the 2xx writes users made in namespace, in time
// order, from the API server's audit log.
func successfulWrites(t *testing.T, namespace string, users ...string) []auditlog.Write {
	t.Helper()
	events, err := env.AuditEvents()
	if err != nil {
		t.Fatal(err)
	}
	return auditlog.Writes(events, auditlog.Query{Users: users, Namespace: namespace, SucceededOnly: true})
}
