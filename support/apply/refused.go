package apply

import (
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Refused reports whether err is the API server refusing an object for
// what it is, so that sending it again cannot help until the object or the
// cluster's other objects change: invalid (422, which covers a node port
// out of range or already allocated), malformed (400), or forbidden (403,
// by an admission policy, a webhook, a quota or RBAC). Server errors,
// timeouts, throttling and conflicts are transient and are not refusals.
func Refused(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || apierrors.IsForbidden(err)
}

// Refusal says in one sentence, for a condition or an event, what the API
// server refused: its own words (the status message, which names the
// object's kind and name), without the wrapping this package and its
// callers add.
func Refusal(err error) string {
	message := err.Error()
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Message != "" {
		message = status.Status().Message
	}
	return "Refused by the management cluster's API server: " + message
}
