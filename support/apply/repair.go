package apply

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// exclusive is a pair of fields where one value of the first forbids the
// second: a Deployment whose strategy type is Recreate may not have
// strategy.rollingUpdate. When someone switches the type to the other value,
// the API server defaults the second field under their field manager; an
// apply of the first value cannot remove a field another manager owns, and
// the API server refuses it. Drift repair would be stuck for good.
type exclusive struct {
	when  []string
	is    string
	clear []string
}

// exclusives are the Kubernetes API's pairs, per kind.
var exclusives = map[schema.GroupKind][]exclusive{
	{Group: "apps", Kind: "Deployment"}:  {{when: []string{"spec", "strategy", "type"}, is: "Recreate", clear: []string{"spec", "strategy", "rollingUpdate"}}},
	{Group: "apps", Kind: "StatefulSet"}: {{when: []string{"spec", "updateStrategy", "type"}, is: "OnDelete", clear: []string{"spec", "updateStrategy", "rollingUpdate"}}},
	{Group: "apps", Kind: "DaemonSet"}:   {{when: []string{"spec", "updateStrategy", "type"}, is: "OnDelete", clear: []string{"spec", "updateStrategy", "rollingUpdate"}}},
}

// clearExclusive removes, with one merge patch that also sets the desired
// value, every field of live that desired's values forbid. It sends nothing
// when there is none.
func (a Applier) clearExclusive(ctx context.Context, gvk schema.GroupVersionKind, want, live *unstructured.Unstructured) error {
	patch := map[string]any{}
	for _, pair := range exclusives[gvk.GroupKind()] {
		value, found, _ := unstructured.NestedString(want.Object, pair.when...)
		if !found || value != pair.is {
			continue
		}
		if _, present, _ := unstructured.NestedFieldNoCopy(live.Object, pair.clear...); !present {
			continue
		}
		if err := unstructured.SetNestedField(patch, value, pair.when...); err != nil {
			return err
		}
		if err := unstructured.SetNestedField(patch, nil, pair.clear...); err != nil {
			return err
		}
	}
	if len(patch) == 0 {
		return nil
	}
	if _, err := a.mergePatch(ctx, gvk, live, patch); err != nil {
		return fmt.Errorf("failed to clear fields that %s %s forbids: %w", gvk.Kind, client.ObjectKeyFromObject(live), err)
	}
	return nil
}

// replaceLists sets, with one merge patch, every list of want that got
// does not hold as want has it. An apply merges list entries and cannot
// remove an entry another field manager owns (a port someone changed, a
// container someone added): the object would never converge, and every
// pass would apply again. A merge patch replaces a list whole. It returns
// the API server's answer to the patch, or nil when it sent none.
func (a Applier) replaceLists(ctx context.Context, gvk schema.GroupVersionKind, want, got *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	patch := map[string]any{}
	differingLists(want.Object, got.Object, nil, patch)
	delete(patch, "metadata")
	if len(patch) == 0 {
		return nil, nil
	}
	patched, err := a.mergePatch(ctx, gvk, got, patch)
	if err != nil {
		return nil, fmt.Errorf("failed to replace lists of %s %s that another field manager keeps entries in: %w", gvk.Kind, client.ObjectKeyFromObject(got), err)
	}
	return patched, nil
}

// differingLists adds to patch, at its path, every list under want that got
// does not contain as want has it.
func differingLists(want, got any, path []string, patch map[string]any) {
	switch w := want.(type) {
	case map[string]any:
		g, _ := got.(map[string]any)
		for key, child := range w {
			differingLists(child, g[key], append(path[:len(path):len(path)], key), patch)
		}
	case []any:
		if !Contains(got, w) {
			_ = unstructured.SetNestedField(patch, runtime.DeepCopyJSONValue(w), path...)
		}
	}
}

// mergePatch sends a JSON merge patch to the object of kind gvk named like
// key, as the owner, and returns the API server's answer.
func (a Applier) mergePatch(ctx context.Context, gvk schema.GroupVersionKind, key client.Object, patch map[string]any) (*unstructured.Unstructured, error) {
	data, err := json.Marshal(patch)
	if err != nil {
		return nil, fmt.Errorf("failed to encode a patch: %w", err)
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	obj.SetNamespace(key.GetNamespace())
	obj.SetName(key.GetName())
	opts := []client.PatchOption{client.FieldOwner(a.FieldOwner)}
	if a.DryRun {
		opts = append(opts, client.DryRunAll)
	}
	if err := a.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, data), opts...); err != nil {
		return nil, err
	}
	return obj, nil
}
