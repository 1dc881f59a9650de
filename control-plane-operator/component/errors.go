package component

import "fmt"

// MissingImageError says the release payload has no image a component
// needs. Retrying does not help: the payload must change.
type MissingImageError struct {
	// ReleaseImage is the payload's pull spec.
	ReleaseImage string
	// Tag is the payload tag that is missing.
	Tag string
	// Component needs it.
	Component string
}

func (e *MissingImageError) Error() string {
	return fmt.Sprintf("release image %s has no %q image, needed by %s", e.ReleaseImage, e.Tag, e.Component)
}

// MissingAddressError says a Service a component reaches has no ClusterIP
// yet. It resolves itself once the Service is allocated one.
type MissingAddressError struct {
	// Service names the Service.
	Service string
}

func (e *MissingAddressError) Error() string {
	return fmt.Sprintf("Service %s has no ClusterIP yet", e.Service)
}

// Image returns the pull spec of the payload image with tag, for component.
func (in Inputs) Image(component, tag string) (string, error) {
	image, ok := in.Release.ComponentImage(tag)
	if !ok {
		pullSpec := in.Release.PullSpec
		if pullSpec == "" {
			pullSpec = in.HostedControlPlane.Spec.ReleaseImage
		}
		return "", &MissingImageError{ReleaseImage: pullSpec, Tag: tag, Component: component}
	}
	return image, nil
}

// ClusterIP returns the ClusterIP of the Service service.
func (in Inputs) ClusterIP(service string) (string, error) {
	ip := in.ClusterIPs[service]
	if ip == "" || ip == "None" {
		return "", &MissingAddressError{Service: service}
	}
	return ip, nil
}
