package nodepool

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// keyed is what the controller's workers remember per object (a hosted
// cluster's client, a pool's release), safe for them to share.
type keyed[V any] struct {
	mu sync.Mutex
	m  map[types.NamespacedName]V
}

func (k *keyed[V]) load(key types.NamespacedName) (V, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	v, ok := k.m[key]
	return v, ok
}

func (k *keyed[V]) store(key types.NamespacedName, v V) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[types.NamespacedName]V{}
	}
	k.m[key] = v
}

// forget drops what is remembered of key: its object is going or gone.
func (k *keyed[V]) forget(key types.NamespacedName) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.m, key)
}
