package leaderelection

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
)

// Readiness: a candidate that cannot talk to the API server would be of no
// use when it is needed, and a leader that cannot renew is about to stop.
// The elector keeps what its own Lease requests tell of its link to the API
// server, and Ready turns it into a readiness check:
//   - not ready while the API server refuses the candidate's credentials
//     (401, or 403 on its own Lease: a token no longer valid, a Role that
//     lost its Lease rules), at once;
//   - not ready once its requests have failed, with no success since, for
//     longer than the renew deadline (the API server unreachable, or
//     answering only with errors).
// A follower's only request while the Lease is quiet is its open watch: a
// connection that stays open to a frozen API server is not noticed until
// the watch ends, at the latest when the server's watch timeout (5 to 10
// minutes) closes it. Leaders notice within their renew interval.

// contact is what a candidate's Lease requests told of its link to the API
// server.
type contact struct {
	mu sync.Mutex
	// failingSince is when requests started failing; zero while the last
	// one succeeded.
	failingSince time.Time
	// refused is the last request's error when it refused the credentials.
	refused error
}

// record notes the outcome of a request made at now. A conflict or a
// missing Lease is an answer: the API server was reached.
func (c *contact) record(now time.Time, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil || apierrors.IsConflict(err) || apierrors.IsNotFound(err) || apierrors.IsAlreadyExists(err) ||
		apierrors.IsGone(err) || apierrors.IsResourceExpired(err) {
		c.failingSince, c.refused = time.Time{}, nil
		return
	}
	if c.failingSince.IsZero() {
		c.failingSince = now
	}
	c.refused = nil
	if apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err) {
		c.refused = err
	}
}

// Ready is a readiness check (controller-runtime's healthz.Checker): see
// the comment above contact.
func (e *Elector) Ready(_ *http.Request) error {
	e.contact.mu.Lock()
	defer e.contact.mu.Unlock()
	if e.contact.refused != nil {
		return fmt.Errorf("the API server refuses this candidate's requests on Lease %s: %w", e.lease, e.contact.refused)
	}
	if since := e.contact.failingSince; !since.IsZero() && e.clock.Since(since) > e.timings.RenewDeadline {
		return fmt.Errorf("no request on Lease %s has succeeded for %s, longer than the renew deadline (%s)", e.lease, e.clock.Since(since).Round(time.Second), e.timings.RenewDeadline)
	}
	return nil
}

// trackedAPI records the outcome of every request in the elector's contact.
type trackedAPI struct {
	api leaseAPI
	e   *Elector
}

func (t trackedAPI) note(err error) error {
	t.e.contact.record(t.e.clock.Now(), err)
	return err
}

func (t trackedAPI) Get(ctx context.Context) (*coordinationv1.Lease, error) {
	lease, err := t.api.Get(ctx)
	return lease, t.note(err)
}

func (t trackedAPI) Create(ctx context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	result, err := t.api.Create(ctx, lease)
	return result, t.note(err)
}

func (t trackedAPI) Update(ctx context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	result, err := t.api.Update(ctx, lease)
	return result, t.note(err)
}

func (t trackedAPI) List(ctx context.Context) (*coordinationv1.Lease, string, error) {
	lease, rv, err := t.api.List(ctx)
	return lease, rv, t.note(err)
}

func (t trackedAPI) Watch(ctx context.Context, resourceVersion string) (watch.Interface, error) {
	w, err := t.api.Watch(ctx, resourceVersion)
	return w, t.note(err)
}
