package hostedcluster

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/leaderelection"
	"github.com/hypershift-le/hypershift/support/releaseinfo"
)

// TestShardQueueTakesOnlyItsShard: every way into a shard's queue drops
// the HostedClusters of other shards and keeps its own; without shards,
// the queue is controller-runtime's default.
func TestShardQueueTakesOnlyItsShard(t *testing.T) {
	if q := (&Reconciler{}).newQueue(); q != nil {
		t.Fatal("without shards the controller gets a queue of its own, not controller-runtime's default")
	}
	r := &Reconciler{Shard: 2, Shards: 4}
	q := r.newQueue()("hostedcluster-shard-2", workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	var mine, others []reconcile.Request
	for i := 0; len(mine) < 4 || len(others) < 4; i++ {
		req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: fmt.Sprintf("clusters-%d", i), Name: "demo"}}
		if leaderelection.ShardOf(hyperv1.HostedClusterShardKey(req.Namespace, req.Name), 4) == 2 {
			mine = append(mine, req)
		} else {
			others = append(others, req)
		}
	}
	pq := q.(priorityqueue.PriorityQueue[reconcile.Request])
	adds := []func(reconcile.Request){
		q.Add,
		func(req reconcile.Request) { q.AddAfter(req, time.Millisecond) },
		q.AddRateLimited,
		func(req reconcile.Request) { pq.AddWithOpts(priorityqueue.AddOpts{}, req) },
	}
	for i, add := range adds {
		add(others[i])
		add(mine[i])
	}
	got := map[reconcile.Request]bool{}
	deadline := time.Now().Add(5 * time.Second)
	for len(got) < len(mine) && time.Now().Before(deadline) {
		req, _ := q.Get()
		got[req] = true
		q.Done(req)
	}
	for _, req := range mine {
		if !got[req] {
			t.Errorf("the shard's own %s was not queued", req)
		}
	}
	time.Sleep(50 * time.Millisecond)
	if n := q.Len(); n != 0 {
		t.Errorf("%d requests of other shards were queued", n)
	}
	for req := range got {
		if leaderelection.ShardOf(hyperv1.HostedClusterShardKey(req.Namespace, req.Name), 4) != 2 {
			t.Errorf("%s of another shard was queued", req)
		}
	}
}

// TestForShardKeepsEverySetting: a shard's reconciler has every exported
// setting of the one it is made from (a field added to Reconciler and
// forgotten in ForShard fails here), its shard, and the shared caches.
func TestForShardKeepsEverySetting(t *testing.T) {
	r := &Reconciler{}
	v := reflect.ValueOf(r).Elem()
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if !f.IsExported() || f.Name == "Shard" || f.Name == "Shards" {
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
	s := r.ForShard(1, 4)
	sv := reflect.ValueOf(s).Elem()
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if f.IsExported() && f.Name != "Shard" && f.Name != "Shards" && !reflect.DeepEqual(v.Field(i).Interface(), sv.Field(i).Interface()) {
			t.Errorf("ForShard does not copy %s", f.Name)
		}
	}
	if s.Shard != 1 || s.Shards != 4 {
		t.Errorf("ForShard(1, 4) gave shard %d of %d", s.Shard, s.Shards)
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
