package releaseinfo

import (
	"errors"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
)

// Reason is the ValidReleaseImage condition's reason for a Lookup error,
// the same on a HostedCluster and a NodePool.
func Reason(err error) string {
	switch {
	case errors.Is(err, ErrUnauthorized):
		return hyperv1.ReleaseImageUnauthorizedReason
	case errors.Is(err, ErrNotFound):
		return hyperv1.ReleaseImageNotFoundReason
	case errors.Is(err, ErrMalformed):
		return hyperv1.ReleaseImageMalformedReason
	case errors.Is(err, ErrUnreachable):
		return hyperv1.ReleaseImageUnreachableReason
	}
	return hyperv1.ReleaseImageUnavailableReason
}
