package hostedcontrolplane

import (
	"errors"
	"strings"

	"k8s.io/utils/ptr"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/control-plane-operator/component"
	"github.com/hypershift-le/hypershift/control-plane-operator/components/kubeapiserver"
	"github.com/hypershift-le/hypershift/control-plane-operator/pki"
	"github.com/hypershift-le/hypershift/support/conditions"
)

// ComponentAvailable is the condition type of one component's availability,
// e.g. KubeApiserverAvailable for kube-apiserver.
func ComponentAvailable(name string) string {
	var b strings.Builder
	for _, part := range strings.Split(name, "-") {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String() + "Available"
}

// computeStatus turns what the pass found into status. A condition about
// something the pass did not get to keeps its last value.
func (r *Reconciler) computeStatus(s *scope) {
	hcp := s.hcp
	set := func(conditionType string, ok bool, reason, message string) {
		conditions.Set(&hcp.Status.Conditions, hcp.Generation, conditionType, conditions.Status(ok), reason, message)
	}
	var missingImage *component.MissingImageError
	switch {
	case s.releaseErr != nil && errors.As(s.releaseErr, &missingImage):
		set(hyperv1.ValidReleaseImage, false, hyperv1.MissingComponentImageReason, s.releaseErr.Error())
	case s.releaseErr != nil:
		set(hyperv1.ValidReleaseImage, false, hyperv1.ReleaseImageUnavailableReason, s.releaseErr.Error())
	case s.release != nil:
		set(hyperv1.ValidReleaseImage, true, hyperv1.AsExpectedReason, "Release image "+hcp.Spec.ReleaseImage+" is valid: version "+s.release.Version)
	}
	switch {
	case s.refusal != "":
		set(hyperv1.ValidConfiguration, false, hyperv1.RefusedByAPIServerReason, s.refusal)
	case s.configErr != nil:
		set(hyperv1.ValidConfiguration, false, hyperv1.InvalidConfigurationReason, s.configErr.Error())
	case s.rendered:
		set(hyperv1.ValidConfiguration, true, hyperv1.AsExpectedReason, "Configuration is valid")
	}
	var caErr *pki.CAError
	switch {
	case s.pkiErr != nil && errors.As(s.pkiErr, &caErr):
		set(hyperv1.ValidPKI, false, hyperv1.UnusableCAReason, s.pkiErr.Error())
	case s.pkiErr != nil:
		set(hyperv1.ValidPKI, false, hyperv1.PKIErrorReason, s.pkiErr.Error())
	case s.secrets != nil:
		set(hyperv1.ValidPKI, true, hyperv1.AsExpectedReason, "Every certificate and key is valid")
	}
	if s.servicesDone {
		hcp.Status.ControlPlaneEndpoint = s.endpoint
	}
	if s.secrets[pki.AdminKubeconfigSecret] != nil {
		hcp.Status.KubeConfig = &hyperv1.KubeconfigSecretRef{Name: pki.AdminKubeconfigSecret, Key: pki.KubeconfigKey}
	}
	if s.availability != nil {
		r.computeAvailability(s, set)
	}
	s.setSecretEncryptionStatus(set)
	s.setRefusal(set)
	r.Fenced.setCondition(hcp)
}

// computeAvailability sets each component's condition; ready and the
// version once every component has rolled out the release; and Available
// while every component serves and the kube-apiserver answers at its
// endpoint (through a rollout too, when the previous release still
// serves).
func (r *Reconciler) computeAvailability(s *scope, set func(string, bool, string, string)) {
	hcp := s.hcp
	for _, c := range s.components {
		a := s.availability[c.Name()]
		set(ComponentAvailable(c.Name()), a.Available, a.Reason, a.Message)
	}
	hcp.Status.ObservedGeneration = hcp.Generation
	// cluster-api's contract: no Machine runs this control plane.
	hcp.Status.ExternalManagedControlPlane = ptr.To(true)
	hcp.Status.Ready = s.allRolledOut()
	if hcp.Status.Ready {
		hcp.Status.Version = s.release.Version
		hcp.Status.ReleaseImage = hcp.Spec.ReleaseImage
	}
	available, waiting := s.available()
	switch {
	case !available:
		set(hyperv1.Available, false, hyperv1.ComponentsUnavailableReason, "Waiting for "+strings.Join(waiting, ", "))
	case s.endpoint == nil:
		set(hyperv1.Available, false, hyperv1.EndpointUnknownReason, s.endpointWhy)
	case !s.readyzAsked:
	case s.readyzErr != nil:
		set(hyperv1.Available, false, hyperv1.KubeAPIServerNotReadyReason, "The kube-apiserver does not answer /readyz at "+kubeapiserver.URL(s.endpoint))
	default:
		set(hyperv1.Available, true, hyperv1.AsExpectedReason, "The kube-apiserver answers /readyz at "+kubeapiserver.URL(s.endpoint))
		// cluster-api's contract: the control plane came up; it stays so.
		hcp.Status.Initialization = &hyperv1.ControlPlaneInitialization{ControlPlaneInitialized: ptr.To(true)}
	}
}
