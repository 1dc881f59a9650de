package leasearbiter

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/holderpod"
)

// holderSeen is what the controller last learnt of one Lease's holder.
type holderSeen struct {
	holder string
	// uid and resourceVersion identify the version of the holder's pod
	// last judged running: the same version needs no second look.
	uid             types.UID
	resourceVersion string
	// goneAt is when the holder's pod object was first seen missing.
	goneAt time.Time
	// node is the node the holder's pod was last seen bound to.
	node string
}

// holders holds a holderSeen per Lease.
type holders struct {
	mu   sync.Mutex
	seen map[types.NamespacedName]holderSeen
}

func (h *holders) get(key types.NamespacedName, holder string) holderSeen {
	h.mu.Lock()
	defer h.mu.Unlock()
	if seen, ok := h.seen[key]; ok && seen.holder == holder {
		return seen
	}
	return holderSeen{holder: holder}
}

func (h *holders) set(key types.NamespacedName, seen holderSeen) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.seen == nil {
		h.seen = map[types.NamespacedName]holderSeen{}
	}
	h.seen[key] = seen
}

func (h *holders) forget(key types.NamespacedName) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.seen, key)
}

// onNode returns the Leases whose holder's pod was last seen on node.
func (h *holders) onNode(node string) []types.NamespacedName {
	h.mu.Lock()
	defer h.mu.Unlock()
	var keys []types.NamespacedName
	for key, seen := range h.seen {
		if seen.node == node {
			keys = append(keys, key)
		}
	}
	return keys
}

// judge says whether the holder of the Lease key is gone, and whether its
// pod object exists. A version of the pod judged running before, as the
// metadata cache shows it, is not read again; any other is read from the
// API server: the cache could lag behind a pod that was just created, or
// hold a deleted pod's namesake.
func (r *Reconciler) judge(ctx context.Context, key types.NamespacedName, holder string) (holderpod.Verdict, bool, error) {
	podKey := client.ObjectKey{Namespace: key.Namespace, Name: holder}
	cached := &metav1.PartialObjectMetadata{}
	cached.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))
	err := r.Client.Get(ctx, podKey, cached)
	if err != nil && !apierrors.IsNotFound(err) {
		return holderpod.Verdict{}, false, fmt.Errorf("failed to get pod %s from the cache: %w", podKey, err)
	}
	seen := r.holders.get(key, holder)
	if err == nil && seen.uid == cached.UID && seen.resourceVersion == cached.ResourceVersion {
		return holderpod.Verdict{Reason: string(corev1.PodRunning)}, true, nil
	}
	pod := &corev1.Pod{}
	if err := r.APIReader.Get(ctx, podKey, pod); err != nil {
		if !apierrors.IsNotFound(err) {
			return holderpod.Verdict{}, false, fmt.Errorf("failed to get pod %s: %w", podKey, err)
		}
		pod = nil
	}
	verdict := holderpod.Judge(pod, hyperv1.ControlPlaneOperatorName)
	switch {
	case pod == nil:
		if seen.goneAt.IsZero() {
			seen.goneAt = r.now()
		}
		seen.uid, seen.resourceVersion = "", ""
	case verdict.Stopped || !verdict.ExitedAt.IsZero():
		// Not remembered as running: the same version must be judged
		// again, when the fence comes into force, say.
		seen.uid, seen.resourceVersion, seen.goneAt, seen.node = "", "", time.Time{}, pod.Spec.NodeName
	case !verdict.Gone:
		seen.uid, seen.resourceVersion, seen.goneAt, seen.node = pod.UID, pod.ResourceVersion, time.Time{}, pod.Spec.NodeName
	default:
		seen.uid, seen.resourceVersion, seen.goneAt = "", "", time.Time{}
	}
	r.holders.set(key, seen)
	return verdict, pod != nil, nil
}
