// Package backoff is how soon the project's controllers retry a failed
// reconcile: controller-runtime's default rate limiter with the per-object
// delay capped at MaxFailureDelay instead of 1000s.
//
// A reconcile fails when the API server refuses or cannot answer. Once it
// can again, no watch event may come (a controller's own status writes
// start no reconcile), so the next retry is what brings the object and its
// status up to date: within MaxFailureDelay of the end of an outage of any
// length, not up to 16 minutes later. HyperShift caps its controllers'
// delays at 10s too.
package backoff

import (
	"time"

	"golang.org/x/time/rate"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// MaxFailureDelay caps the delay before a failed reconcile is retried.
const MaxFailureDelay = 10 * time.Second

// FailureRateLimiter is controller-runtime's default rate limiter (per
// object, exponential from 5ms; overall, 10 per second with a burst of 100)
// with the per-object delay capped at MaxFailureDelay.
func FailureRateLimiter() workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](5*time.Millisecond, MaxFailureDelay),
		&workqueue.TypedBucketRateLimiter[reconcile.Request]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
	)
}
