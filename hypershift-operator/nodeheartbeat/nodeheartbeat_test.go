package nodeheartbeat

import (
	"slices"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func nodeLease(node, version string) *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: corev1.NamespaceNodeLease, Name: node, ResourceVersion: version}}
}

// events records what subscribers hear; await compares it, in any order.
type events struct {
	mu  sync.Mutex
	got []string
}

func (e *events) record(node string, lost bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	what := "found"
	if lost {
		what = "lost"
	}
	e.got = append(e.got, node+" "+what)
}

func (e *events) await(t *testing.T, want ...string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		e.mu.Lock()
		got := append([]string(nil), e.got...)
		e.mu.Unlock()
		if len(got) >= len(want) {
			// Timers of different nodes fire in no set order.
			slices.Sort(got)
			want = slices.Sorted(slices.Values(want))
			if !slices.Equal(got, want) {
				t.Fatalf("heard %v, want %v", got, want)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("heard %v, want %v", got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestLostAndFound: a node silent for the bound is lost, once; a new
// version of its Lease finds it; the same version seen again does not; a
// deleted Lease of a lost node is heard as found (nothing is known of it)
// and drops it; an unsubscribed function hears nothing.
func TestLostAndFound(t *testing.T) {
	tr := New(200*time.Millisecond, nil)
	defer tr.Stop()
	var e, other events
	tr.Subscribe(e.record)
	unsubscribe := tr.Subscribe(other.record)
	unsubscribe()

	tr.Observe(nodeLease("a", "1"))
	tr.Observe(nodeLease("b", "1"))
	tr.Observe(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "elsewhere", Name: "c", ResourceVersion: "1"}})
	// b keeps heartbeating; a goes silent.
	for i := 2; i < 8; i++ {
		time.Sleep(50 * time.Millisecond)
		tr.Observe(nodeLease("b", string(rune('0'+i))))
		tr.Observe(nodeLease("a", "1"))
	}
	e.await(t, "a lost")
	if lost := tr.Lost(); len(lost) != 1 || lost["a"] < 200*time.Millisecond {
		t.Fatalf("Lost() = %v, want a silent for at least 200ms", lost)
	}
	if _, _, ok := tr.Silence("c"); ok {
		t.Fatal("a Lease outside kube-node-lease was tracked")
	}
	tr.Observe(nodeLease("a", "2"))
	e.await(t, "a lost", "a found")
	if lost := tr.Lost(); len(lost) != 0 {
		t.Fatalf("Lost() = %v after a heartbeat", lost)
	}
	e.await(t, "a lost", "a found", "a lost", "b lost")
	tr.Forget("a")
	tr.Forget("b")
	tr.Forget("nobody")
	e.await(t, "a lost", "a found", "a lost", "b lost", "a found", "b found")
	if _, _, ok := tr.Silence("a"); ok {
		t.Fatal("a forgotten node is still tracked")
	}
	other.await(t)
}
