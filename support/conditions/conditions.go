// Package conditions sets the status conditions of the project's objects
// one way for both operators: with the object's generation, and with a
// lastTransitionTime that moves only when the status does, so that a pass
// that finds nothing new writes nothing.
package conditions

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Status is True when ok, False otherwise.
func Status(ok bool) metav1.ConditionStatus {
	if ok {
		return metav1.ConditionTrue
	}
	return metav1.ConditionFalse
}

// Set sets the condition conditionType to status, with reason and message,
// observed at generation.
func Set(conditions *[]metav1.Condition, generation int64, conditionType string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(conditions, metav1.Condition{
		Type:               conditionType,
		Status:             status,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: generation,
	})
}
