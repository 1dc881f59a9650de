// Package conditions sets the status conditions of the project's objects
// one way for both operators: with the object's generation, and with a
// lastTransitionTime that moves only when the status does, so that a pass
// that finds nothing new writes nothing.
package conditions

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Set sets the condition conditionType to True when ok, False otherwise,
// with reason and message, observed at generation.
func Set(conditions *[]metav1.Condition, generation int64, conditionType string, ok bool, reason, message string) {
	status := metav1.ConditionFalse
	if ok {
		status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(conditions, metav1.Condition{
		Type:               conditionType,
		Status:             status,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: generation,
	})
}
