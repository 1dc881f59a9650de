package operator_test

import (
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/testutil"
	"github.com/hypershift-le/hypershift/test/operatorprocess"
	"github.com/hypershift-le/hypershift/test/testenv"
)

// proxiedKubeconfig is user's kubeconfig reaching the API server through p.
func proxiedKubeconfig(t *testing.T, p *testenv.Proxy, user string) string {
	t.Helper()
	kubeconfig, err := env.AddUserKubeconfig(user)
	if err != nil {
		t.Fatal(err)
	}
	proxied, err := p.ProxiedKubeconfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return proxied
}

func leaseTransitions(t *testing.T, cp *controlPlane) int32 {
	t.Helper()
	lease := &coordinationv1.Lease{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: cp.namespace, Name: hyperv1.ControlPlaneOperatorLeaseName}, lease); err != nil {
		t.Fatal(err)
	}
	return ptr.Deref(lease.Spec.LeaseTransitions, 0)
}

// TestRidesOutAnOutage cuts a leader and its standby off from the API
// server (every byte of both processes held at a proxy) for 30s, 60s and
// 120s, far past the lease duration: the leader stops its controllers at
// its renew deadline but keeps running; when the API server answers again
// its renewal succeeds, the holder and the transitions are unchanged, it
// writes again within 2s, and the standby writes nothing at all.
func TestRidesOutAnOutage(t *testing.T) {
	for _, outage := range []time.Duration{30 * time.Second, 60 * time.Second, 120 * time.Second} {
		t.Run(fmt.Sprintf("when the API server is away for %s", outage), func(t *testing.T) {
			t.Parallel()
			cp := newControlPlane(t, false)
			proxy, err := testenv.StartProxy(env.Config.Host)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(proxy.Close)
			metricsAddr := operatorprocess.FreeAddress(t)
			a := startCPO(t, cp, "cpo-a", cp.releaseImage, "--kubeconfig="+proxiedKubeconfig(t, proxy, "cpo-cpo-a"), "--metrics-bind-address="+metricsAddr)
			awaitHolder(t, cp, 30*time.Second, "cpo-a")
			b := startCPO(t, cp, "cpo-b", cp.releaseImage, "--kubeconfig="+proxiedKubeconfig(t, proxy, "cpo-cpo-b"))
			awaitComponents(t, cp)
			time.Sleep(2 * time.Second) // b is a running standby; a is converged
			transitions := leaseTransitions(t, cp)

			stalled := time.Now()
			proxy.Stall()
			awaitNotLeading(t, metricsAddr, renewDeadline+margin)
			time.Sleep(outage - time.Since(stalled))
			toggle(t, cp) // a change for the leader to make once it is back
			proxy.Resume()
			resumed := time.Now()

			var firstWrite time.Time
			deadline := time.Now().Add(10 * time.Second)
			for firstWrite.IsZero() && time.Now().Before(deadline) {
				for _, w := range successfulWrites(t, cp.namespace, a.user) {
					if !w.Lease() && w.At.After(resumed) {
						firstWrite = w.At
						break
					}
				}
				time.Sleep(100 * time.Millisecond)
			}
			if firstWrite.IsZero() {
				t.Fatalf("the leader wrote nothing within 10s of the API server answering again; log:\n%s", operatorprocess.Tail(a.Output(), 3000))
			}
			t.Logf("the leader wrote again %s after the API server answered", firstWrite.Sub(resumed).Round(time.Millisecond))
			if took := firstWrite.Sub(resumed); took > 2*time.Second {
				t.Errorf("the leader's first write came %s after the API server answered, want within 2s", took)
			}
			assertIncumbentKept(t, cp, a, b, transitions)
			for _, w := range successfulWrites(t, cp.namespace, a.user) {
				if !w.Lease() && w.At.After(stalled.Add(renewDeadline)) && w.At.Before(resumed) {
					t.Errorf("the leader wrote past its renew deadline, before the API server answered: %v", w)
				}
			}
		})
	}
}

// TestRidesOutAnEtcdOutage freezes etcd (SIGSTOP) under the API server for
// 30s, longer than the lease duration, with a leader and a standby: the
// leader keeps running and leads again, the holder and transitions are
// unchanged, and the standby writes nothing.
func TestRidesOutAnEtcdOutage(t *testing.T) {
	cp := newControlPlane(t, false)
	a := startCPO(t, cp, "cpo-a", cp.releaseImage)
	awaitHolder(t, cp, 30*time.Second, "cpo-a")
	b := startCPO(t, cp, "cpo-b", cp.releaseImage)
	awaitComponents(t, cp)
	time.Sleep(2 * time.Second)
	transitions := leaseTransitions(t, cp)
	etcd, err := env.Process("etcd")
	if err != nil {
		t.Fatal(err)
	}
	if err := etcd.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	t.Cleanup(func() {
		if !resumed {
			_ = etcd.Signal(syscall.SIGCONT)
		}
	})
	time.Sleep(30 * time.Second)
	if err := etcd.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resumed = true
	back := time.Now()
	toggle(t, cp)
	testutil.Eventually(t, 30*time.Second, func() error {
		for _, w := range successfulWrites(t, cp.namespace, a.user) {
			if !w.Lease() && w.At.After(back) {
				return nil
			}
		}
		return errors.New("the leader has not written since etcd came back")
	})
	t.Logf("the leader wrote again %s after etcd came back", time.Since(back).Round(time.Millisecond))
	assertIncumbentKept(t, cp, a, b, transitions)
}

// assertIncumbentKept checks that the leader a (cpo-a) rode out the outage:
// it runs, holds the Lease with its transitions unchanged, and the
// standby b wrote nothing.
func assertIncumbentKept(t *testing.T, cp *controlPlane, a, b *cpo, transitions int32) {
	t.Helper()
	if a.Exited(0) {
		t.Fatalf("the leader exited (%v); log:\n%s", a.ExitErr(), operatorprocess.Tail(a.Output(), 3000))
	}
	if h := holder(t, cp); h != "cpo-a" {
		t.Fatalf("holder %q after the outage, want cpo-a", h)
	}
	if got := leaseTransitions(t, cp); got != transitions {
		t.Fatalf("leaseTransitions %d after the outage, want %d", got, transitions)
	}
	if writes := successfulWrites(t, cp.namespace, b.user); len(writes) != 0 {
		t.Fatalf("the standby wrote: %v", writes)
	}
}
