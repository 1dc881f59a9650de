package testenv

import (
	"testing"

	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CountEvents counts the occurrences of events with reason about obj (by
// namespace and name), a series counting as many as it holds: what a test
// of "one event per change" compares with 1.
func (e *Env) CountEvents(t testing.TB, obj client.Object, reason string) int {
	t.Helper()
	list := &eventsv1.EventList{}
	if err := e.Client.List(t.Context(), list, client.InNamespace(obj.GetNamespace())); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ev := range list.Items {
		if ev.Regarding.Name != obj.GetName() || ev.Reason != reason {
			continue
		}
		n++
		if ev.Series != nil {
			n += int(ev.Series.Count) - 1
		}
	}
	return n
}
