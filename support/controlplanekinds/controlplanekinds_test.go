package controlplanekinds_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/hypershift-le/hypershift/support/controlplanekinds"
	"github.com/hypershift-le/hypershift/support/scheme"
)

// TestEachKindIsWhatItSays: its objects, its list and its resource are
// those of its GVK, and no kind is listed twice.
func TestEachKindIsWhatItSays(t *testing.T) {
	s := scheme.New()
	seen := map[string]bool{}
	for _, k := range controlplanekinds.All {
		if seen[k.GVK.String()] {
			t.Errorf("%s is listed twice", k.GVK)
		}
		seen[k.GVK.String()] = true
		if gvk, err := apiutil.GVKForObject(k.New(), s); err != nil || gvk != k.GVK {
			t.Errorf("%s: New returns a %s (%v)", k.GVK, gvk, err)
		}
		if gvk, err := apiutil.GVKForObject(k.NewList(), s); err != nil || gvk != k.GVK.GroupVersion().WithKind(k.GVK.Kind+"List") {
			t.Errorf("%s: NewList returns a %s (%v)", k.GVK, gvk, err)
		}
		if plural, _ := meta.UnsafeGuessKindToResource(k.GVK); plural.Resource != k.Resource {
			t.Errorf("%s: resource %q, want %q", k.GVK, k.Resource, plural.Resource)
		}
		if k.Deleted && !k.Applied {
			t.Errorf("%s: deleted at teardown, but never applied", k.GVK)
		}
	}
}
