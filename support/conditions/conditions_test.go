package conditions

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSet(t *testing.T) {
	var conditions []metav1.Condition
	Set(&conditions, 3, "Available", Status(false), "Waiting", "Waiting for etcd")
	first := meta.FindStatusCondition(conditions, "Available")
	if first == nil || first.Status != metav1.ConditionFalse || first.ObservedGeneration != 3 || first.Reason != "Waiting" {
		t.Fatalf("condition = %+v", first)
	}
	// Make the first transition visibly older than any later one.
	conditions[0].LastTransitionTime = metav1.NewTime(time.Now().Add(-time.Hour))
	since := conditions[0].LastTransitionTime

	Set(&conditions, 4, "Available", Status(false), "Waiting", "Waiting for kube-apiserver")
	if c := conditions[0]; !c.LastTransitionTime.Equal(&since) || c.ObservedGeneration != 4 || c.Message != "Waiting for kube-apiserver" {
		t.Errorf("when the status does not change, the transition time must stay and the rest follow: %+v", c)
	}
	Set(&conditions, 4, "Available", Status(true), "AsExpected", "Ready")
	if c := conditions[0]; c.LastTransitionTime.Equal(&since) || c.Status != metav1.ConditionTrue {
		t.Errorf("when the status changes, the transition time must move: %+v", c)
	}
}
