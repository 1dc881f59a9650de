package backoff

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func TestFailureRateLimiter(t *testing.T) {
	limiter := FailureRateLimiter()
	item := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "clusters", Name: "example"}}
	if d := limiter.When(item); d > 10*time.Millisecond {
		t.Errorf("when a first reconcile failed, the retry waits %s, want about 5ms", d)
	}
	var last time.Duration
	for range 30 {
		last = limiter.When(item)
	}
	if last != MaxFailureDelay {
		t.Errorf("after 31 failures in a row, the retry waits %s, want the cap, %s", last, MaxFailureDelay)
	}
	limiter.Forget(item)
	if d := limiter.When(item); d > 10*time.Millisecond {
		t.Errorf("once a reconcile succeeded, the next failure's retry waits %s, want about 5ms", d)
	}
}
