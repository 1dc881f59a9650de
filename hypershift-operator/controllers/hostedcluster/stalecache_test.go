package hostedcluster_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/controllers/hostedcluster"
	"github.com/hypershift-le/hypershift/support/testutil"
)

// laggingClient is the manager's client with a HostedCluster cache that
// has not received the operator's own status writes for lag after each:
// meanwhile Get returns the copy the write replaced, as an informer does
// whose watch event has not arrived yet.
type laggingClient struct {
	client.Client
	lag time.Duration

	mu   sync.Mutex
	held map[client.ObjectKey]heldCopy
}

type heldCopy struct {
	hc    *hyperv1.HostedCluster
	until time.Time
}

func (c *laggingClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if hc, ok := obj.(*hyperv1.HostedCluster); ok {
		c.mu.Lock()
		h, found := c.held[key]
		c.mu.Unlock()
		if found && time.Now().Before(h.until) {
			h.hc.DeepCopyInto(hc)
			return nil
		}
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

func (c *laggingClient) Status() client.SubResourceWriter {
	return laggingStatus{SubResourceWriter: c.Client.Status(), c: c}
}

type laggingStatus struct {
	client.SubResourceWriter
	c *laggingClient
}

func (s laggingStatus) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	hc, ok := obj.(*hyperv1.HostedCluster)
	if !ok {
		return s.SubResourceWriter.Update(ctx, obj, opts...)
	}
	key := client.ObjectKeyFromObject(hc)
	before := &hyperv1.HostedCluster{}
	if err := s.c.Get(ctx, key, before); err != nil {
		return err
	}
	if err := s.SubResourceWriter.Update(ctx, obj, opts...); err != nil {
		return err
	}
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	if h, found := s.c.held[key]; !found || time.Now().After(h.until) {
		s.c.held[key] = heldCopy{hc: before, until: time.Now().Add(s.c.lag)}
	}
	return nil
}

// TestAPassFromALaggingCacheSeesItsOwnWrite: the operator's cache lags
// behind its status writes (laggingClient). The Lease holder changes to
// b, and status says b; back to a before the cache has that write: the
// next pass starts from a copy whose status says a, and must still write
// a, because the API server holds b, and nothing starts a pass later
// (the operator's own status writes do not).
func TestAPassFromALaggingCacheSeesItsOwnWrite(t *testing.T) {
	const lag = 3 * time.Second
	startOperator(t, func(r *hostedcluster.Reconciler) {
		r.Client = &laggingClient{Client: r.Client, lag: lag, held: map[client.ObjectKey]heldCopy{}}
	})
	c := newCluster(t, "4.17.0", nil)
	awaitControlPlane(t, c)
	testutil.Eventually(t, converge, func() error { // the Role must exist before the stand-in CPO acts
		return env.Client.Get(t.Context(), client.ObjectKey{Namespace: c.controlPlaneNamespace(), Name: "control-plane-operator"}, &appsv1.Deployment{})
	})
	cpo := standInCPO(t, c)
	lease := &coordinationv1.Lease{}
	key := client.ObjectKey{Namespace: c.controlPlaneNamespace(), Name: hyperv1.ControlPlaneOperatorLeaseName}
	// One write per change of holder, not renewAs's renewals: a renewal
	// can start a pass of its own (the Lease's liveness), and then the
	// check would pass without the fix.
	take := func(holder string) {
		t.Helper()
		testutil.Eventually(t, converge, func() error {
			err := cpo.Get(t.Context(), key, lease)
			if err != nil && !apierrors.IsNotFound(err) {
				return err
			}
			lease.Spec.HolderIdentity = ptr.To(holder)
			lease.Spec.LeaseDurationSeconds = ptr.To[int32](60)
			lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
			if apierrors.IsNotFound(err) {
				lease.Namespace, lease.Name = key.Namespace, key.Name
				return cpo.Create(t.Context(), lease)
			}
			return cpo.Update(t.Context(), lease)
		})
	}
	take("cpo-a")
	awaitLeader(t, c, "cpo-a", 0)
	time.Sleep(lag + time.Second) // the cache has every write so far

	take("cpo-b")
	awaitLeader(t, c, "cpo-b", 0)
	take("cpo-a")
	testutil.Eventually(t, 2*lag+5*time.Second, func() error {
		if got := c.get(t).Status.ControlPlaneOperator; got == nil || got.HolderIdentity != "cpo-a" {
			return fmt.Errorf("status.controlPlaneOperator = %+v after the Lease went back to cpo-a", got)
		}
		return nil
	})
}
