package hostedcluster

import (
	"reflect"
	"testing"

	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hypershift-le/hypershift/support/leaderelection"
	"github.com/hypershift-le/hypershift/support/releaseinfo"
)

// TestForShardKeepsEverySetting: a shard's reconciler has every exported
// setting of the one it is made from (a field added to Reconciler and
// forgotten in ForShard fails here), its shard, and the shared caches.
func TestForShardKeepsEverySetting(t *testing.T) {
	r := &Reconciler{}
	v := reflect.ValueOf(r).Elem()
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if !f.IsExported() || f.Name == "Shard" {
			continue
		}
		field := v.Field(i)
		switch field.Kind() {
		case reflect.Bool:
			field.SetBool(true)
		case reflect.Int, reflect.Int64:
			field.SetInt(7)
		case reflect.String:
			field.SetString("set")
		case reflect.Slice:
			field.Set(reflect.MakeSlice(field.Type(), 1, 1))
		case reflect.Struct:
			// A struct setting: a non-zero first field is enough to tell.
			setFirst(t, f.Name, field)
		case reflect.Interface, reflect.Pointer, reflect.Func:
			setPointer(t, f.Name, field)
		default:
			t.Fatalf("field %s of kind %s: teach this test to set it", f.Name, field.Kind())
		}
		if field.IsZero() {
			t.Fatalf("field %s could not be set: teach this test to set it", f.Name)
		}
	}
	s := r.ForShard(leaderelection.Shard{Index: 1, Count: 4})
	sv := reflect.ValueOf(s).Elem()
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if f.IsExported() && f.Name != "Shard" && !reflect.DeepEqual(v.Field(i).Interface(), sv.Field(i).Interface()) {
			t.Errorf("ForShard does not copy %s", f.Name)
		}
	}
	if s.Shard != (leaderelection.Shard{Index: 1, Count: 4}) {
		t.Errorf("ForShard(1 of 4) gave shard %+v", s.Shard)
	}
}

func setFirst(t *testing.T, name string, field reflect.Value) {
	t.Helper()
	for i := range field.NumField() {
		if !field.Type().Field(i).IsExported() {
			continue
		}
		f := field.Field(i)
		switch f.Kind() {
		case reflect.Bool:
			f.SetBool(true)
			return
		case reflect.Int64, reflect.Int:
			f.SetInt(7)
			return
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 1, 1))
			return
		}
	}
	t.Fatalf("field %s: teach this test to set it", name)
}

// setPointer sets an interface, pointer or func field to a non-nil value.
func setPointer(t *testing.T, name string, field reflect.Value) {
	t.Helper()
	switch field.Kind() {
	case reflect.Pointer:
		field.Set(reflect.New(field.Type().Elem()))
	case reflect.Func:
		field.Set(reflect.MakeFunc(field.Type(), func([]reflect.Value) []reflect.Value { return nil }))
	case reflect.Interface:
		// A value of each interface type the reconciler's settings have.
		for _, v := range []any{
			&struct{ client.Client }{}, &struct{ client.Reader }{}, &struct{ releaseinfo.Provider }{},
			&struct{ events.EventRecorder }{}, &struct{ clock.PassiveClock }{}, &struct{ FenceProbe }{},
		} {
			if reflect.TypeOf(v).Implements(field.Type()) {
				field.Set(reflect.ValueOf(v))
				return
			}
		}
		t.Fatalf("field %s of type %s: teach this test to set it", name, field.Type())
	}
}
