package e2e

import (
	"context"
	"sync"
	"testing"
)

// loseNode loses node (localcluster.LoseNode) and returns what brings it
// back, once, waiting until it is Ready; a node the test has not brought
// back is brought back when it ends, also after a loss that failed
// half-way.
func loseNode(t *testing.T, node string) (comeBack func()) {
	t.Helper()
	back, err := lc.LoseNode(node)
	var once sync.Once
	bring := func(ctx context.Context) {
		once.Do(func() {
			if back == nil {
				return
			}
			if err := back(ctx); err != nil {
				t.Errorf("bringing node %s back: %v", node, err)
			}
		})
	}
	// t.Context() is done by the time cleanups run.
	t.Cleanup(func() { bring(context.Background()) })
	if err != nil {
		t.Fatal(err)
	}
	return func() { bring(t.Context()) }
}

// partitionNode cuts node and its pods off from the management API server
// (localcluster.PartitionNode) and returns what heals the cut, once; a cut
// the test has not healed is healed when it ends.
func partitionNode(t *testing.T, node string) (heal func()) {
	t.Helper()
	undo, err := lc.PartitionNode(node)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	heal = func() {
		once.Do(func() {
			if err := undo(); err != nil {
				t.Errorf("healing the partition of node %s: %v", node, err)
			}
		})
	}
	t.Cleanup(heal)
	return heal
}
