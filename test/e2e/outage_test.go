package e2e

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/cmd/cluster"
	"github.com/hypershift-le/hypershift/support/testutil"
	"github.com/hypershift-le/hypershift/test/nodes"
)

// available reports the HostedCluster's Available condition.
func available(t *testing.T, name string) *metav1.Condition {
	t.Helper()
	hc := &hyperv1.HostedCluster{}
	if err := lc.Env.Client.Get(t.Context(), client.ObjectKey{Namespace: "clusters", Name: name}, hc); err != nil {
		t.Fatal(err)
	}
	return meta.FindStatusCondition(hc.Status.Conditions, hyperv1.Available)
}

// testControlPlaneGone: every pod of a control plane is deleted and a quota
// keeps them from coming back: within the lease duration (10s in these
// stories) plus 5s for the status to be written, the HostedCluster is no
// longer Available=True; lifting the quota brings it back.
func testControlPlaneGone(t *testing.T) {
	name := "demo"
	ns := controlPlaneNamespace(name)
	testutil.Eventually(t, time.Minute, func() error {
		if c := available(t, name); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("Available %+v", c)
		}
		return nil
	})
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "no-pods"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}},
	}
	if err := lc.Env.Client.Create(t.Context(), quota); err != nil {
		t.Fatal(err)
	}
	if err := lc.Env.Client.DeleteAllOf(t.Context(), &corev1.Pod{}, client.InNamespace(ns), client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	gone := time.Now()
	testutil.Eventually(t, 10*time.Second+5*time.Second, func() error {
		if c := available(t, name); c != nil && c.Status == metav1.ConditionTrue {
			return fmt.Errorf("still Available=True %s after every pod was deleted", time.Since(gone).Round(time.Second))
		}
		return nil
	})
	c := available(t, name)
	t.Logf("Available=%s (%s) %s after every pod of the control plane was deleted", c.Status, c.Reason, time.Since(gone).Round(time.Millisecond))
	if err := lc.Env.Client.Delete(t.Context(), quota); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 3*time.Minute, func() error {
		if c := available(t, name); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("Available %+v", c)
		}
		return nil
	})
}

// podsOf records the operator pods (names and restart counts) of ns.
func podsOf(t *testing.T, ns string, labels client.MatchingLabels) map[string]int32 {
	t.Helper()
	list := &corev1.PodList{}
	if err := lc.Env.Client.List(t.Context(), list, client.InNamespace(ns), labels); err != nil {
		t.Fatal(err)
	}
	out := map[string]int32{}
	for _, p := range list.Items {
		restarts := int32(0)
		for _, s := range p.Status.ContainerStatuses {
			restarts += s.RestartCount
		}
		out[p.Name] = restarts
	}
	return out
}

func getLease(t *testing.T, ns, name string) *coordinationv1.Lease {
	t.Helper()
	lease := &coordinationv1.Lease{}
	if err := lc.Env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, lease); err != nil {
		t.Fatal(err)
	}
	return lease
}

func leaseOf(t *testing.T, ns, name string) (string, int32) {
	t.Helper()
	lease := getLease(t, ns, name)
	return ptr.Deref(lease.Spec.HolderIdentity, ""), ptr.Deref(lease.Spec.LeaseTransitions, 0)
}

// leaseRenewed is when the CPO Lease of ns was last renewed.
func leaseRenewed(t *testing.T, ns string) time.Time {
	t.Helper()
	lease := getLease(t, ns, hyperv1.ControlPlaneOperatorLeaseName)
	if lease.Spec.RenewTime == nil {
		return time.Time{}
	}
	return lease.Spec.RenewTime.Time
}

// testManagementOutage: three HostedClusters (demo, ha, HighlyAvailable,
// and a third one), the management cluster's kube-apiserver frozen
// (SIGSTOP) for 60s: no operator pod restarts or is replaced, no Lease
// changes holder, every leader renews within 10s of the API server
// answering, and every HostedCluster is Available with its hosted API
// answering within 10s (20s on real nodes) of the management cluster's
// nodes and pods being ready again (its node controller may mark them unreachable at the thaw:
// the freeze outlasts its grace period). The third cluster is destroyed
// afterwards.
func testManagementOutage(t *testing.T) {
	clusters := []string{"demo", "ha", "outage"}
	createCluster(t, "outage", hyperv1.SingleReplica)
	defer execute(t, cluster.NewDestroyCommand(), "cluster", "--name=outage", "--namespace=clusters", "--wait", "--timeout=4m")
	type leaseState struct {
		holder      string
		transitions int32
	}
	leases := map[string]leaseState{}
	pods := map[string]map[string]int32{}
	record := func() {
		for _, name := range clusters {
			ns := controlPlaneNamespace(name)
			h, n := leaseOf(t, ns, hyperv1.ControlPlaneOperatorLeaseName)
			leases[ns] = leaseState{h, n}
			pods[ns] = podsOf(t, ns, client.MatchingLabels{"app": "control-plane-operator"})
		}
		h, n := leaseOf(t, "hypershift", hyperv1.HypershiftOperatorLeaseName)
		leases["hypershift"] = leaseState{h, n}
		pods["hypershift"] = podsOf(t, "hypershift", client.MatchingLabels{"app": "hypershift-operator"})
	}
	for _, name := range clusters {
		testutil.Eventually(t, 3*time.Minute, func() error {
			if c := available(t, name); c == nil || c.Status != metav1.ConditionTrue {
				return fmt.Errorf("%s: Available %+v", name, c)
			}
			return nil
		})
	}
	record()
	hostedClients := map[string]*hostedCluster{}
	for _, name := range clusters {
		hostedClients[name] = hosted(t, name)
	}
	before := map[string]leaseState{}
	beforePods := map[string]map[string]int32{}
	for k, v := range leases {
		before[k] = v
	}
	for k, v := range pods {
		beforePods[k] = v
	}

	apiserver, err := lc.Env.Process("kube-apiserver")
	if err != nil {
		t.Fatal(err)
	}
	if err := apiserver.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	thawed := false
	t.Cleanup(func() {
		if !thawed {
			_ = apiserver.Signal(syscall.SIGCONT)
		}
	})
	time.Sleep(60 * time.Second)
	if err := apiserver.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	thawed = true
	back := time.Now()
	// Every leader renews within 10s of the API server answering: the
	// operators rode the outage out.
	for _, name := range clusters {
		testutil.Eventually(t, 10*time.Second-time.Since(back)+time.Second, func() error {
			if renewed := leaseRenewed(t, controlPlaneNamespace(name)); !renewed.After(back) {
				return fmt.Errorf("%s: the Lease was last renewed at %s, before the API server answered", name, renewed.Format(time.StampMilli))
			}
			return nil
		})
	}
	// The freeze outlasts the node controller's grace period (50s): at the
	// thaw, before the kubelets' next report reaches it, the management
	// cluster may mark its nodes unreachable and their pods not ready, as
	// any cluster would. Availability is judged once the nodes and the
	// control planes' pods are ready again.
	nodesBack, bound := awaitNodesAndPodsReady(t, clusters, back), 20*time.Second
	if took := nodesBack.Sub(back); took > time.Second {
		t.Logf("the management cluster's nodes and pods were ready again %s after the API server answered", took.Round(time.Millisecond))
	}
	// The status written before the freeze still says Available=True: a
	// cluster counts as back once it is Available on a live Lease and its
	// hosted API answers, which also waits for the nodes'
	// kube-proxies, cut off as long, to serve the Services' endpoints again
	// (measured: about 10s): 20s.
	for _, name := range clusters {
		testutil.Eventually(t, bound-time.Since(nodesBack)+time.Second, func() error {
			if c := available(t, name); c == nil || c.Status != metav1.ConditionTrue {
				return fmt.Errorf("%s: Available %+v", name, c)
			}
			if _, err := hostedClients[name].client.CoreV1().Namespaces().List(t.Context(), metav1.ListOptions{Limit: 1}); err != nil {
				return fmt.Errorf("%s: the hosted API does not answer: %w", name, err)
			}
			return nil
		})
	}
	t.Logf("every HostedCluster was back %s after the API server answered again (%s after its nodes and pods were ready)", time.Since(back).Round(time.Millisecond), time.Since(nodesBack).Round(time.Millisecond))
	time.Sleep(5 * time.Second)
	record()
	for k, want := range before {
		if got := leases[k]; got != want {
			t.Errorf("Lease in %s: holder %q transitions %d after the outage, want %q and %d", k, got.holder, got.transitions, want.holder, want.transitions)
		}
	}
	for ns, want := range beforePods {
		for pod, restarts := range want {
			got, ok := pods[ns][pod]
			switch {
			case !ok:
				t.Errorf("pod %s/%s was replaced during the outage", ns, pod)
			case got != restarts:
				t.Errorf("pod %s/%s restarted %d times during the outage", ns, pod, got-restarts)
			}
		}
	}
}

// awaitNodesAndPodsReady waits, up to a minute from back, until every node
// is Ready and every pod of the clusters' control planes is ready, and
// returns when that was first seen.
func awaitNodesAndPodsReady(t *testing.T, clusters []string, back time.Time) time.Time {
	t.Helper()
	testutil.Eventually(t, time.Minute-time.Since(back), func() error {
		list := &corev1.NodeList{}
		if err := lc.Env.Client.List(t.Context(), list); err != nil {
			return err
		}
		for _, n := range list.Items {
			if !nodes.Ready(&n) {
				return fmt.Errorf("node %s is not Ready", n.Name)
			}
		}
		for _, name := range clusters {
			list := &corev1.PodList{}
			if err := lc.Env.Client.List(t.Context(), list, client.InNamespace(controlPlaneNamespace(name))); err != nil {
				return err
			}
			for _, p := range list.Items {
				if !podReady(&p) {
					return fmt.Errorf("pod %s/%s is not ready", p.Namespace, p.Name)
				}
			}
		}
		return nil
	})
	return time.Now()
}
