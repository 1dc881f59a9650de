package operator_test

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/control-plane-operator/controllers/hostedcontrolplane"
	"github.com/hypershift-le/hypershift/hypershift-operator/render"
	"github.com/hypershift-le/hypershift/support/testutil"
	"github.com/hypershift-le/hypershift/test/operatorprocess"
)

// podKubeconfig writes a kubeconfig that authenticates as the CPO's
// ServiceAccount of ns with a token bound to pod (an admin impersonating
// both, as a pod-bound token would present them).
func podKubeconfig(t *testing.T, ns, pod string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(path); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, user := range cfg.AuthInfos {
		user.Impersonate = "system:serviceaccount:" + ns + ":" + hyperv1.ControlPlaneOperatorName
		user.ImpersonateGroups = []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}
		user.ImpersonateUserExtra = map[string][]string{"authentication.kubernetes.io/pod-name": {pod}}
	}
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

var fencedMetric = regexp.MustCompile(`(?m)^control_plane_operator_fenced_writes_total (\d+)$`)

// TestEveryFencedWriteIsCounted runs the Lease holder behind a fence that
// judges against another Lease (as a stale API server cache would), so that
// every write it makes is refused: the metric counts each refusal the audit
// log shows, status updates included, and once the fence is right again
// the HostedControlPlane's status says how many were refused.
func TestEveryFencedWriteIsCounted(t *testing.T) {
	cp := newControlPlane(t, false)
	ns := cp.namespace
	if err := env.Client.Create(t.Context(), render.FencingPolicy()); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	decoy := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "decoy"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("someone-else")},
	}
	// The fencing policy judges control-plane namespaces only.
	namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	if err := env.Client.Patch(t.Context(), namespace, client.RawPatch(types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"`+hyperv1.HostedControlPlaneLabel+`":"true"}}}`))); err != nil {
		t.Fatal(err)
	}
	binding := render.NamespaceFencingBinding(ns, "clusters/demo")
	binding.Spec.ParamRef.Name = decoy.Name
	sa := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "control-plane-operator-sa"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: hyperv1.ControlPlaneOperatorName},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: hyperv1.ControlPlaneOperatorName}},
	}
	for _, obj := range []client.Object{decoy, binding, sa} {
		if err := env.Client.Create(t.Context(), obj); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = env.Client.Delete(t.Context(), binding) })
	// With its finalizer in place, every pass gets to its status update.
	hcp, err := getHCP(t, cp)
	if err != nil {
		t.Fatal(err)
	}
	hcp.Finalizers = append(hcp.Finalizers, hostedcontrolplane.Finalizer)
	if err := env.Client.Update(t.Context(), hcp); err != nil {
		t.Fatal(err)
	}

	// Start only once the fence is in force.
	testutil.Eventually(t, 30*time.Second, func() error {
		probe := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe"},
			Spec:       corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Ports: []corev1.ServicePort{{Port: 1}}},
		}
		err := env.AsPod(t, ns, hyperv1.ControlPlaneOperatorName, "cpo-a").Create(t.Context(), probe, client.DryRunAll)
		if err == nil || !strings.Contains(err.Error(), hyperv1.FencingDenialPrefix) {
			return fmt.Errorf("not fenced yet: %w", err)
		}
		return nil
	})
	metricsAddr := operatorprocess.FreeAddress(t)
	since := time.Now()
	startCPO(t, cp, "cpo-a", cp.releaseImage, "--kubeconfig="+podKubeconfig(t, ns, "cpo-a"), "--metrics-bind-address="+metricsAddr)
	awaitHolder(t, cp, 30*time.Second, "cpo-a")
	count := func() int {
		m := fencedMetric.FindStringSubmatch(scrape(t, metricsAddr))
		if m == nil {
			return 0
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		if n := count(); n < 3 {
			return fmt.Errorf("%d fenced writes counted", n)
		}
		return nil
	})

	// Make the fence judge against the real Lease again.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		live := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(binding), live); err != nil {
			return err
		}
		live.Spec.ParamRef.Name = hyperv1.ControlPlaneOperatorLeaseName
		return env.Client.Update(t.Context(), live)
	})
	if err != nil {
		t.Fatal(err)
	}
	var condition *metav1.Condition
	testutil.Eventually(t, 30*time.Second, func() error {
		hcp, err := getHCP(t, cp)
		if err != nil {
			return err
		}
		condition = meta.FindStatusCondition(hcp.Status.Conditions, hostedcontrolplane.WritesFenced)
		if condition == nil || condition.Status != metav1.ConditionTrue {
			return fmt.Errorf("WritesFenced: %+v", condition)
		}
		return nil
	})
	time.Sleep(2 * time.Second) // the fence no longer refuses: the count is final
	counted := count()

	events, err := env.AuditEvents()
	if err != nil {
		t.Fatal(err)
	}
	refused, statusRefused := 0, 0
	var kinds []string
	for _, e := range events {
		if e.RequestReceivedTimestamp.Time.Before(since) || e.ImpersonatedUser == nil || e.ResponseStatus == nil || e.ObjectRef == nil ||
			e.ImpersonatedUser.Extra["authentication.kubernetes.io/pod-name"] == nil || e.ResponseStatus.Code != 403 ||
			!strings.Contains(e.ResponseStatus.Message, hyperv1.FencingDenialPrefix) {
			continue
		}
		refused++
		kinds = append(kinds, e.Verb+" "+e.ObjectRef.Resource+"/"+e.ObjectRef.Subresource+" "+e.ObjectRef.Name)
		if e.ObjectRef.Subresource == "status" {
			statusRefused++
		}
	}
	if counted != refused || statusRefused == 0 {
		t.Fatalf("the metric counted %d fenced writes; the audit log shows %d (%d of them status updates): %v", counted, refused, statusRefused, kinds)
	}
	if !strings.Contains(condition.Message, "refused") {
		t.Errorf("WritesFenced says: %s", condition.Message)
	}
	t.Logf("%d fenced writes counted, %d of them status updates; status: %s", counted, statusRefused, condition.Message)
}
