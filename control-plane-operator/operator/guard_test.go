package operator_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/control-plane-operator/components/etcd"
	"github.com/hypershift-le/hypershift/control-plane-operator/pki"
	"github.com/hypershift-le/hypershift/test/auditlog"
	"github.com/hypershift-le/hypershift/test/operatorprocess"
)

func scrape(t *testing.T, addr string) string {
	t.Helper()
	var body string
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err == nil {
			raw, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			body = string(raw)
			if resp.StatusCode == http.StatusOK {
				return body
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("no metrics from %s: %s", addr, body)
	return ""
}

func hasMetric(body, line string) bool {
	for _, l := range strings.Split(body, "\n") {
		if strings.TrimSpace(l) == line {
			return true
		}
	}
	return false
}

// TestVersionGuard runs a leader rolled out for another release: it holds
// the Lease, writes nothing else, and says so in its log and metrics.
func TestVersionGuard(t *testing.T) {
	cp := newControlPlane(t, false)
	metricsAddr := operatorprocess.FreeAddress(t)
	stale := startCPO(t, cp, "cpo-stale", "quay.io/ocp/release:4.16.0", "--metrics-bind-address="+metricsAddr)
	awaitHolder(t, cp, 30*time.Second, stale.Pod)
	toggle(t, cp)
	time.Sleep(3 * time.Second)

	for _, w := range successfulWrites(t, cp.namespace, stale.user) {
		if !w.Lease() {
			t.Errorf("the stale leader wrote: %v", w)
		}
	}
	for _, obj := range []client.Object{&appsv1.StatefulSet{}, &corev1.Secret{}} {
		name := etcd.Name
		if _, ok := obj.(*corev1.Secret); ok {
			name = pki.RootCASecret
		}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: cp.namespace, Name: name}, obj); !apierrors.IsNotFound(err) {
			t.Errorf("%T %s exists (%v)", obj, name, err)
		}
	}
	if !strings.Contains(stale.Output(), "Not reconciling: this control-plane-operator was rolled out for another release") {
		t.Errorf("the log does not say why it writes nothing:\n%s", operatorprocess.Tail(stale.Output(), 2000))
	}
	body := scrape(t, metricsAddr)
	for _, want := range []string{"control_plane_operator_release_image_mismatch 1", `hypershift_leader_election_is_leader{lease="` + cp.namespace + `/` + hyperv1.ControlPlaneOperatorLeaseName + `"} 1`,
		`leader_election_master_status{name="` + cp.namespace + `/` + hyperv1.ControlPlaneOperatorLeaseName + `"} 1`} {
		if !hasMetric(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// TestStandbyServesAndWritesNothing checks a standby: healthy, ready,
// leader gauge 0, and not one write.
func TestStandbyServesAndWritesNothing(t *testing.T) {
	cp := newControlPlane(t, false)
	leader := startCPO(t, cp, "cpo-leader", cp.releaseImage)
	awaitHolder(t, cp, 30*time.Second, leader.Pod)
	awaitComponents(t, cp)
	metricsAddr, healthAddr := operatorprocess.FreeAddress(t), operatorprocess.FreeAddress(t)
	standby := startCPO(t, cp, "cpo-standby", cp.releaseImage, "--metrics-bind-address="+metricsAddr, "--health-probe-bind-address="+healthAddr)
	toggle(t, cp)
	time.Sleep(3 * time.Second)

	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get("http://" + healthAddr + path)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("the standby's %s answers %s: readiness must not wait for leadership", path, resp.Status)
		}
	}
	if body := scrape(t, metricsAddr); !hasMetric(body, `hypershift_leader_election_is_leader{lease="`+cp.namespace+`/`+hyperv1.ControlPlaneOperatorLeaseName+`"} 0`) {
		t.Error("the standby's leader gauge is not 0")
	}
	if w := successfulWrites(t, cp.namespace, standby.user); len(w) != 0 {
		t.Fatalf("the standby wrote: %v", w)
	}
}

// TestNegativeControls proves the checks above can fail.
func TestNegativeControls(t *testing.T) {
	t.Run("when the Role lacks leases, no CPO ever leads and the log names the permission", func(t *testing.T) {
		cp := newControlPlane(t, true)
		c := startCPO(t, cp, "cpo-a", cp.releaseImage)
		time.Sleep(leaseDuration + margin)
		if h := holder(t, cp); h != "" {
			t.Fatalf("the Lease is held by %q", h)
		}
		if !strings.Contains(c.Output(), `leases.coordination.k8s.io \"control-plane-operator-leader-elect\" is forbidden`) &&
			!strings.Contains(c.Output(), `leases.coordination.k8s.io "control-plane-operator-leader-elect" is forbidden`) {
			t.Fatalf("the log does not name the missing permission:\n%s", operatorprocess.Tail(c.Output(), 2000))
		}
		if w := successfulWrites(t, cp.namespace, c.user); len(w) != 0 {
			t.Fatalf("a CPO without the Lease wrote: %v", w)
		}
	})

	t.Run("when election is disabled, the audit check reports writers without the Lease", func(t *testing.T) {
		cp := newControlPlane(t, false)
		a := startCPO(t, cp, "cpo-a", cp.releaseImage, "--leader-elect=false")
		b := startCPO(t, cp, "cpo-b", cp.releaseImage, "--leader-elect=false")
		awaitComponents(t, cp)
		toggle(t, cp)
		time.Sleep(2 * time.Second)
		v := auditlog.OutsideHoldings(successfulWrites(t, cp.namespace, a.user, b.user), auditlog.ByUser)
		if len(v) == 0 {
			t.Fatal("the audit check found nothing wrong with two unelected writers: it cannot fail")
		}
		t.Logf("the check reports %d writes outside any holding, e.g. %v", len(v), v[0])
		if h := holder(t, cp); h != "" {
			t.Fatalf("a Lease exists (%q) though election is off", h)
		}
	})
}
