package nodepool

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
)

// appliedAnnotation records, on a Node, the labels and taints its pool
// gave it, so that what the pool no longer asks for is removed, and only
// that: the kubelet's and other controllers' labels and taints stay.
const appliedAnnotation = "hypershift.openshift.io/nodePool-applied"

// applied is what appliedAnnotation holds.
type applied struct {
	Labels []string `json:"labels,omitempty"`
	// Taints are key:effect.
	Taints []string `json:"taints,omitempty"`
}

// propagate gives node the pool's labels and taints in place, as HyperShift
// does (no machine is replaced for them), and takes away those the pool
// gave it and no longer asks for. It writes only when something changes.
func propagate(ctx context.Context, hosted client.Client, np *hyperv1.NodePool, node *corev1.Node) error {
	var before applied
	if raw := node.Annotations[appliedAnnotation]; raw != "" {
		_ = json.Unmarshal([]byte(raw), &before) // a mangled record forgets nothing the spec asks for
	}
	labels := maps.Clone(node.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	for _, k := range before.Labels {
		if _, wanted := np.Spec.NodeLabels[k]; !wanted && k != hyperv1.NodePoolLabel {
			delete(labels, k)
		}
	}
	maps.Copy(labels, np.Spec.NodeLabels)

	wantTaint := map[string]hyperv1.Taint{}
	for _, t := range np.Spec.Taints {
		wantTaint[t.Key+":"+string(t.Effect)] = t
	}
	var taints []corev1.Taint
	for _, t := range node.Spec.Taints {
		id := t.Key + ":" + string(t.Effect)
		if _, ours := wantTaint[id]; ours || slices.Contains(before.Taints, id) {
			continue // ours: set below, or gone from the spec
		}
		taints = append(taints, t)
	}
	for _, t := range np.Spec.Taints {
		taints = append(taints, corev1.Taint{Key: t.Key, Value: t.Value, Effect: t.Effect})
	}

	now := applied{Labels: slices.Sorted(maps.Keys(np.Spec.NodeLabels)), Taints: slices.Sorted(maps.Keys(wantTaint))}
	record, err := json.Marshal(now)
	if err != nil {
		return err
	}
	if maps.Equal(labels, node.Labels) && sameTaints(taints, node.Spec.Taints) && node.Annotations[appliedAnnotation] == string(record) {
		return nil
	}
	patch := client.MergeFromWithOptions(node.DeepCopy(), client.MergeFromWithOptimisticLock{})
	node.Labels = labels
	node.Spec.Taints = taints
	if node.Annotations == nil {
		node.Annotations = map[string]string{}
	}
	node.Annotations[appliedAnnotation] = string(record)
	if err := hosted.Patch(ctx, node, patch, client.FieldOwner(FieldOwner)); err != nil {
		return fmt.Errorf("failed to give node %s the labels and taints of NodePool %s: %w", node.Name, np.Name, err)
	}
	return nil
}

// sameTaints compares two taint lists, in any order.
func sameTaints(a, b []corev1.Taint) bool {
	key := func(t corev1.Taint) string { return t.Key + "=" + t.Value + ":" + string(t.Effect) }
	as, bs := make([]string, 0, len(a)), make([]string, 0, len(b))
	for _, t := range a {
		as = append(as, key(t))
	}
	for _, t := range b {
		bs = append(bs, key(t))
	}
	slices.Sort(as)
	slices.Sort(bs)
	return strings.Join(as, "\n") == strings.Join(bs, "\n")
}
