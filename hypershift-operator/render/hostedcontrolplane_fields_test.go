package render

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
)

// hostedClusterOnly lists the HostedCluster spec fields, by JSON path, whose
// value deliberately does not reach the HostedControlPlane rendered by
// HostedControlPlane, each with the reason. Every other leaf of the spec
// must: TestHostedControlPlaneCopiesEverySpecField checks both ways.
var hostedClusterOnly = map[string]string{
	// The HO reads the payload this tag names and pins it by digest
	// (status.version.desired.image); the HCP gets that pinned image
	// (Inputs.ReleaseImage), never the tag.
	"release.image": "the HCP's releaseImage is the resolved, pinned payload",
	// The HO reads the Secret in the HostedCluster's namespace and copies
	// its content into the control-plane namespace (PullSecret); the HCP
	// names that copy, whose name is fixed (hyperv1.PullSecretName).
	"pullSecret.name": "copied as a Secret of the fixed name hyperv1.PullSecretName",
	// The HO pauses itself on it, and writes the HCP's pausedUntil apart
	// (applyPausedUntil, under a field owner of its own), so that pausing
	// still reaches the HCP while the rest of its spec is frozen.
	"pausedUntil": "written to the HCP by applyPausedUntil, not by render",
}

// specStep is one step from a struct to one of its leaves: into field Field of
// a struct, through a pointer, into a slice's first element or a map's value.
type specStep struct {
	kind  reflect.Kind
	field int
}

// specLeaf is a field that holds a value: a scalar, or a pointer to an empty
// struct (such as configv1.TLSSecurityProfile's old profile).
type specLeaf struct {
	path  string
	steps []specStep
}

// specLeaves lists the leaves of t by JSON path: "a.b" for fields, "a[]" for
// a slice's elements and "a{}" for a map's values; inline fields add no name.
func specLeaves(t reflect.Type, path string, steps []specStep) []specLeaf {
	join := func(name string) string {
		if path == "" || name == "" {
			return path + name
		}
		return path + "." + name
	}
	step := func(kind reflect.Kind, field int) []specStep {
		return append(slices.Clone(steps), specStep{kind: kind, field: field})
	}
	switch t.Kind() {
	case reflect.Pointer:
		if t.Elem().Kind() == reflect.Struct && t.Elem().NumField() == 0 {
			return []specLeaf{{path: path, steps: steps}}
		}
		return specLeaves(t.Elem(), path, step(reflect.Pointer, 0))
	case reflect.Slice:
		return specLeaves(t.Elem(), path+"[]", step(reflect.Slice, 0))
	case reflect.Map:
		return specLeaves(t.Elem(), path+"{}", step(reflect.Map, 0))
	case reflect.Struct:
		var leaves []specLeaf
		for i := range t.NumField() {
			f := t.Field(i)
			name, options, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || name == "-" {
				continue
			}
			if options == "inline" || (f.Anonymous && name == "") {
				name = ""
			}
			leaves = append(leaves, specLeaves(f.Type, join(name), step(reflect.Struct, i))...)
		}
		return leaves
	default:
		return []specLeaf{{path: path, steps: steps}}
	}
}

// setSpecLeaf follows steps from v, allocating what is nil or empty on the way
// (a pointer's struct, a slice's first element, a map entry), and, when
// change is true, gives the leaf a value it did not have. It fails on a kind
// of leaf it does not know how to change.
func setSpecLeaf(t *testing.T, v reflect.Value, leaf specLeaf, steps []specStep, change bool) {
	if len(steps) == 0 {
		if change {
			changeSpecLeaf(t, v, leaf.path)
		}
		return
	}
	switch s, rest := steps[0], steps[1:]; s.kind {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		setSpecLeaf(t, v.Elem(), leaf, rest, change)
	case reflect.Struct:
		setSpecLeaf(t, v.Field(s.field), leaf, rest, change)
	case reflect.Slice:
		if v.Len() == 0 {
			v.Set(reflect.Append(v, reflect.Zero(v.Type().Elem())))
		}
		setSpecLeaf(t, v.Index(0), leaf, rest, change)
	case reflect.Map:
		if v.IsNil() {
			v.Set(reflect.MakeMap(v.Type()))
		}
		key := reflect.ValueOf("specwalk").Convert(v.Type().Key())
		elem := reflect.New(v.Type().Elem()).Elem()
		setSpecLeaf(t, elem, leaf, rest, change)
		v.SetMapIndex(key, elem)
	}
}

// changeSpecLeaf gives v a distinctive value other than the one it has.
func changeSpecLeaf(t *testing.T, v reflect.Value, path string) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("specwalk-" + strings.NewReplacer(".", "-", "[]", "", "{}", "").Replace(path))
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(v.Int() + 42)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(v.Uint() + 42)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(v.Float() + 0.5)
	case reflect.Pointer: // to an empty struct
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		} else {
			v.SetZero()
		}
	default:
		t.Fatalf("spec field %s is a %s, which this test cannot change yet: teach changeSpecLeaf", path, v.Kind())
	}
}

// TestHostedControlPlaneCopiesEverySpecField walks HostedClusterSpec and, for
// each leaf, renders the HostedControlPlane of a valid HostedCluster twice:
// with the leaf's containers allocated, and with the leaf changed besides.
// The two must differ, so that a field added to HostedClusterSpec and
// forgotten in HostedControlPlane fails here, unless hostedClusterOnly says
// why it is the HO's alone. Entries of hostedClusterOnly must name a leaf
// that exists and does not reach the HCP.
func TestHostedControlPlaneCopiesEverySpecField(t *testing.T) {
	leaves := specLeaves(reflect.TypeFor[hyperv1.HostedClusterSpec](), "", nil)
	seen := map[string]bool{}
	for _, leaf := range leaves {
		seen[leaf.path] = true
		t.Run(leaf.path, func(t *testing.T) {
			render := func(change bool) *hyperv1.HostedControlPlane {
				in := testInputs(hyperv1.SingleReplica)
				setSpecLeaf(t, reflect.ValueOf(&in.HostedCluster.Spec).Elem(), leaf, leaf.steps, change)
				return HostedControlPlane(in)
			}
			reaches := !equality.Semantic.DeepEqual(render(false), render(true))
			_, only := hostedClusterOnly[leaf.path]
			switch {
			case !reaches && !only:
				t.Errorf("HostedCluster spec.%s does not reach the HostedControlPlane: copy it in render.HostedControlPlane or add it to hostedClusterOnly with the reason", leaf.path)
			case reaches && only:
				t.Errorf("HostedCluster spec.%s reaches the HostedControlPlane, yet hostedClusterOnly lists it: remove it from hostedClusterOnly", leaf.path)
			}
		})
	}
	for path := range hostedClusterOnly {
		if !seen[path] {
			t.Errorf("hostedClusterOnly lists spec.%s, which HostedClusterSpec no longer has: remove it from hostedClusterOnly", path)
		}
	}
}
