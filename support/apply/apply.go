// Package apply applies desired objects with server-side apply under a fixed
// field owner, and skips the request entirely when it would change nothing:
// the live object already holds every field the desired one sets, and the
// owner's managed fields hold no field the desired one dropped. A converged
// reconcile makes no write request at all.
//
// Drift repair must not get stuck on what an apply cannot undo (repair.go):
// a field the API server defaulted under another manager that the desired
// values forbid (a rollingUpdate block under a Recreate strategy) is
// cleared first, and a list in which another manager keeps entries (a
// changed Service port, an added container) is replaced whole when the
// apply is refused or leaves the object short of the desired one.
package apply

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Applier applies objects as one field owner.
type Applier struct {
	// Client sends the apply requests.
	Client client.Client
	// Reader reads the live object; nil means Client. With the manager's
	// client, typed kinds are read from its cache.
	Reader client.Reader
	// FieldOwner is the server-side apply field manager.
	FieldOwner string
	// DryRun sends every apply as a server-side dry run: validated and
	// admitted, never persisted.
	DryRun bool
}

// Apply makes the live object hold every field desired sets, with
// ForceOwnership, and drop the fields the owner applied before but desired
// no longer sets. It reads the live object first and sends no request when
// nothing would change. It returns whether it sent an apply. desired is not
// modified.
func (a Applier) Apply(ctx context.Context, desired client.Object) (bool, error) {
	_, sent, err := a.applyAndRead(ctx, desired)
	return sent, err
}

// ApplyInto is Apply that also fills into, an object of desired's kind,
// with the object as the API server last showed it: its answer to the
// apply, or the live object read when nothing was sent. What the API
// server set on the write (a Service's ClusterIP) is known at once, not
// when a cache has seen the write.
func (a Applier) ApplyInto(ctx context.Context, desired, into client.Object) (bool, error) {
	got, sent, err := a.applyAndRead(ctx, desired)
	if err != nil {
		return sent, err
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(got.Object, into); err != nil {
		return sent, fmt.Errorf("failed to read back %s %s: %w", got.GetKind(), client.ObjectKeyFromObject(desired), err)
	}
	return sent, nil
}

// applyAndRead is Apply, and returns the object as the API server last
// showed it.
func (a Applier) applyAndRead(ctx context.Context, desired client.Object) (*unstructured.Unstructured, bool, error) {
	scheme := a.Client.Scheme()
	gvk, err := apiutil.GVKForObject(desired, scheme)
	if err != nil {
		return nil, false, fmt.Errorf("failed to find the kind of %T: %w", desired, err)
	}
	want, err := toUnstructured(desired)
	if err != nil {
		return nil, false, err
	}
	want.SetGroupVersionKind(gvk)

	reader := a.Reader
	if reader == nil {
		reader = a.Client
	}
	live, err := readLive(ctx, reader, scheme, gvk, desired)
	if err != nil {
		live = nil
	}
	switch {
	case err == nil:
		owned, err := ownsOnly(live, a.FieldOwner, want.Object)
		if err != nil {
			return nil, false, err
		}
		if owned && Contains(live.Object, want.Object) {
			return live, false, nil
		}
		if err := a.clearExclusive(ctx, gvk, want, live); err != nil {
			return nil, false, err
		}
	case !apierrors.IsNotFound(err):
		return nil, false, fmt.Errorf("failed to get %s %s: %w", gvk.Kind, client.ObjectKeyFromObject(desired), err)
	}

	key := client.ObjectKeyFromObject(desired)
	got, err := a.apply(ctx, want)
	if apierrors.IsInvalid(err) && live != nil {
		// Another manager's list entries can make the merged object
		// invalid (two ports with one name): replace those lists, then
		// apply again.
		if replaced, rerr := a.replaceLists(ctx, gvk, want, live); rerr != nil || replaced == nil {
			return nil, false, errors.Join(fmt.Errorf("failed to apply %s %s: %w", gvk.Kind, key, err), rerr)
		}
		got, err = a.apply(ctx, want)
	}
	if err != nil {
		return nil, false, fmt.Errorf("failed to apply %s %s: %w", gvk.Kind, key, err)
	}
	if !Contains(got.Object, want.Object) {
		// Applied, but another manager's list entries remain: without
		// this every pass would apply again.
		patched, err := a.replaceLists(ctx, gvk, want, got)
		if err != nil {
			return nil, true, err
		}
		if patched != nil {
			got = patched
		}
	}
	return got, true, nil
}

// apply sends want as a server-side apply and returns the object the API
// server answered with.
func (a Applier) apply(ctx context.Context, want *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	opts := []client.ApplyOption{client.FieldOwner(a.FieldOwner), client.ForceOwnership}
	if a.DryRun {
		opts = append(opts, client.DryRunAll)
	}
	got := want.DeepCopy()
	if err := a.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(got), opts...); err != nil {
		return nil, err
	}
	return got, nil
}

// readLive reads the live object as its typed kind when the scheme knows
// it, so that a cached reader (the manager's client) serves it from its
// informer instead of the API server, and returns it as unstructured for
// the comparison.
func readLive(ctx context.Context, reader client.Reader, scheme *runtime.Scheme, gvk schema.GroupVersionKind, desired client.Object) (*unstructured.Unstructured, error) {
	key := client.ObjectKeyFromObject(desired)
	typed, err := scheme.New(gvk)
	obj, isObject := typed.(client.Object)
	if _, isUnstructured := desired.(*unstructured.Unstructured); err != nil || !isObject || isUnstructured {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(gvk)
		return live, reader.Get(ctx, key, live)
	}
	if err := reader.Get(ctx, key, obj); err != nil {
		return nil, err
	}
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("failed to convert %T: %w", obj, err)
	}
	live := &unstructured.Unstructured{Object: raw}
	// Typed objects read from a cache carry no apiVersion and kind.
	live.SetGroupVersionKind(gvk)
	return live, nil
}

// toUnstructured converts obj for an apply request: without status (written
// through its own subresource) and without the zero creationTimestamp a
// typed object always carries.
func toUnstructured(obj client.Object) (*unstructured.Unstructured, error) {
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("failed to convert %T: %w", obj, err)
	}
	delete(raw, "status")
	if metadata, ok := raw["metadata"].(map[string]any); ok {
		delete(metadata, "creationTimestamp")
	}
	return &unstructured.Unstructured{Object: raw}, nil
}

// Contains reports whether live holds every field of want with the same
// value. Maps may hold extra keys (fields set by the API server or other
// owners); lists must have the same length, element by element.
func Contains(live, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			return len(w) == 0 && live == nil
		}
		for key, wv := range w {
			lv, present := l[key]
			if !present {
				if isEmpty(wv) {
					continue
				}
				return false
			}
			if !Contains(lv, wv) {
				return false
			}
		}
		return true
	case []any:
		l, ok := live.([]any)
		if !ok {
			return len(w) == 0 && live == nil
		}
		if len(l) != len(w) {
			return false
		}
		for i := range w {
			if !Contains(l[i], w[i]) {
				return false
			}
		}
		return true
	default:
		return equalScalar(live, want)
	}
}

// isEmpty is true for values an apply would not set: nil, {} and [].
func isEmpty(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case map[string]any:
		for _, child := range t {
			if !isEmpty(child) {
				return false
			}
		}
		return true
	case []any:
		return len(t) == 0
	}
	return false
}

// equalScalar compares JSON scalars, treating the integer and float forms of
// one number as equal.
func equalScalar(a, b any) bool {
	if fa, ok := number(a); ok {
		fb, ok := number(b)
		return ok && fa == fb
	}
	return a == b
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int32:
		return float64(n), true
	case int:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}
