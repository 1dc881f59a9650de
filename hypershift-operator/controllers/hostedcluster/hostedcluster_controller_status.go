package hostedcluster

import (
	"context"
	"fmt"

	configv1 "github.com/openshift/api/config/v1"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/conditions"
	"github.com/hypershift-le/hypershift/support/releaseinfo"
)

// maxHistory bounds status.version.history; the oldest entries go first.
const maxHistory = 50

// ControlPlaneOperatorSilentReason is hyperv1's, kept here for those that
// name it from this package.
const ControlPlaneOperatorSilentReason = hyperv1.ControlPlaneOperatorSilentReason

// computeStatus turns what the pass found into status, once, when the pass
// ends, and queues the reports of what changed. A condition about something
// the pass did not get to keeps its last value.
func (r *Reconciler) computeStatus(ctx context.Context, s *scope) {
	if s.pauseMessage != "" {
		s.set(hyperv1.ReconciliationActive, metav1.ConditionFalse, hyperv1.ReconciliationPausedReason, s.pauseMessage)
		return
	}
	r.setRelease(s)
	if s.fence != nil {
		s.set(hyperv1.LeaderFencing, s.fence.status, s.fence.reason, s.fence.message)
		s.hc.Status.VerifiedFence = s.verifiedFence
	}
	switch {
	case s.monitoringOff:
		meta.RemoveStatusCondition(&s.hc.Status.Conditions, hyperv1.Monitoring)
	case s.monitoring != nil:
		s.set(hyperv1.Monitoring, s.monitoring.status, s.monitoring.reason, s.monitoring.message)
	}
	if s.observed != nil {
		r.setObserved(s)
	}
	if s.namespaceDeleting {
		s.set(hyperv1.Available, metav1.ConditionFalse, hyperv1.ControlPlaneNamespaceDeletingReason, namespaceDeletingMessage(s))
		s.hc.Status.ControlPlaneOperator = nil
	}
	if s.kubeconfig != "" {
		s.hc.Status.KubeConfig = &hyperv1.LocalObjectReference{Name: s.kubeconfig}
	}
	setBlocked(s)
	setRestore(s)
	setReconciliation(s)
	r.reportChanges(ctx, s)
}

// set sets the HostedCluster's condition conditionType.
func (s *scope) set(conditionType string, status metav1.ConditionStatus, reason, message string) {
	conditions.Set(&s.hc.Status.Conditions, s.hc.Generation, conditionType, status, reason, message)
}

// setRelease shows the payload the pass read and pinned: ValidReleaseImage,
// ReleaseImageTagMoved and the pin, and a new pin's rollout (setVersion)
// until the control plane is observed. recordPin writes it before anything
// is applied.
func (r *Reconciler) setRelease(s *scope) {
	if s.release == nil {
		return
	}
	hc := s.hc
	s.set(hyperv1.ValidReleaseImage, metav1.ConditionTrue, hyperv1.AsExpectedReason, "Release image "+hc.Spec.Release.Image+" is valid: version "+s.release.Version)
	setTagMoved(s)
	if hc.Status.Version == nil {
		hc.Status.Version = &hyperv1.ClusterVersionStatus{}
	}
	v := hc.Status.Version
	v.Desired.Image, v.Desired.Version, v.RequestedImage = s.releaseImage, s.release.Version, hc.Spec.Release.Image
	if s.newPin() {
		// The status written now must not say more than is true now: the
		// new payload is what the cluster rolls out to, and nothing runs it
		// yet.
		r.setVersion(s, nil, nil, nil)
	}
}

// setTagMoved sets ReleaseImageTagMoved, True while the spec's tag names
// another payload than the pinned one.
func setTagMoved(s *scope) {
	hc := s.hc
	spec := hc.Spec.Release.Image
	switch {
	case s.pin.moved:
		s.set(hyperv1.ReleaseImageTagMoved, metav1.ConditionTrue, hyperv1.ReleaseImageTagMoved,
			fmt.Sprintf("Release image %s now names payload %s, not the pinned %s: the control plane keeps running %s; %s",
				spec, s.digest, releaseinfo.DigestOf(s.pin.image), s.pin.image, acceptHint(hc, s.digest)))
	case releaseinfo.HasDigest(spec):
		s.set(hyperv1.ReleaseImageTagMoved, metav1.ConditionFalse, hyperv1.PinnedBySpecReason,
			"Release image "+spec+" names a digest: it cannot move")
	default:
		s.set(hyperv1.ReleaseImageTagMoved, metav1.ConditionFalse, hyperv1.AsExpectedReason,
			"Release image "+spec+" names the pinned payload "+s.digest)
	}
}

// setObserved derives ValidConfiguration, Progressing, Available, the
// version history, the API endpoint and the CPO Lease holder from the
// HostedControlPlane, the CPO Deployment and the Lease the pass observed.
func (r *Reconciler) setObserved(s *scope) {
	o := s.observed
	if s.applied {
		setValidConfiguration(s, o.hcp)
	}
	r.setVersion(s, o.hcp, o.deployment, s.err)
	switch {
	case o.lostNodes != "":
		s.set(hyperv1.Available, metav1.ConditionFalse, hyperv1.ControlPlaneNodeLostReason, o.lostNodes)
	case o.silentFor > 0:
		s.set(hyperv1.Available, metav1.ConditionUnknown, hyperv1.ControlPlaneOperatorSilentReason,
			fmt.Sprintf("No control-plane-operator has renewed Lease %s/%s for its lease duration (%s): nothing is known to run this control plane, and its last reported status may be stale",
				s.namespace, hyperv1.ControlPlaneOperatorLeaseName, o.silentFor))
	default:
		setAvailable(s, o.hcp)
	}
	if o.hcp != nil {
		s.hc.Status.ControlPlaneEndpoint = o.hcp.Status.ControlPlaneEndpoint.DeepCopy()
		// Relayed as the control-plane-operator reports it: whether a
		// backup key can be dropped.
		if c := meta.FindStatusCondition(o.hcp.Status.Conditions, hyperv1.SecretsEncrypted); c != nil {
			s.set(hyperv1.SecretsEncrypted, c.Status, c.Reason, c.Message)
		}
	}
	s.hc.Status.ControlPlaneOperator = leaderStatus(o.lease)
}

// setVersion records the desired release, the pinned payload
// (reconcileRelease), and keeps the history: a new pinned payload starts a
// Partial entry, which completes only when the CPO
// Deployment runs that release, rolled out, and the HostedControlPlane
// reports it ready. Until then Progressing is True, with the reason that
// holds it back: applyErr, the pass's error, when it could not apply the
// release.
func (r *Reconciler) setVersion(s *scope, hcp *hyperv1.HostedControlPlane, deployment *appsv1.Deployment, applyErr error) {
	desired := configv1.Release{Image: s.releaseImage, Version: s.release.Version}
	version := s.hc.Status.Version
	if version == nil {
		version = &hyperv1.ClusterVersionStatus{}
	}
	version.Desired = desired
	version.ObservedGeneration = s.hc.Generation
	if len(version.History) == 0 || version.History[0].Image != desired.Image {
		entry := configv1.UpdateHistory{
			State:       configv1.PartialUpdate,
			StartedTime: metav1.NewTime(r.now()),
			Image:       desired.Image,
			Version:     desired.Version,
		}
		version.History = append([]configv1.UpdateHistory{entry}, version.History...)
		if len(version.History) > maxHistory {
			version.History = version.History[:maxHistory]
		}
	}
	top := &version.History[0]
	operatorRunsIt := rolledOut(deployment, desired.Image)
	if top.State == configv1.PartialUpdate && operatorRunsIt && hcp != nil && hcp.Status.Ready &&
		hcp.Status.ReleaseImage == desired.Image && hcp.Status.Version == desired.Version {
		top.State = configv1.CompletedUpdate
		top.CompletionTime = ptrTime(metav1.NewTime(r.now()))
	}
	s.hc.Status.Version = version

	switch {
	case top.State == configv1.CompletedUpdate:
		s.set(hyperv1.Progressing, metav1.ConditionFalse, hyperv1.AsExpectedReason, "Release "+desired.Version+" is rolled out")
	case !operatorRunsIt && applyErr != nil:
		s.set(hyperv1.Progressing, metav1.ConditionTrue, hyperv1.RolloutBlockedReason,
			"Release "+desired.Version+" is not rolled out: the control-plane-operator Deployment cannot be updated: "+applyErr.Error())
	case !operatorRunsIt:
		s.set(hyperv1.Progressing, metav1.ConditionTrue, hyperv1.ControlPlaneOperatorRollingOutReason,
			"Rolling out release "+desired.Version+": the control-plane-operator does not run it yet")
	default:
		s.set(hyperv1.Progressing, metav1.ConditionTrue, hyperv1.RollingOutReason, "Rolling out release "+desired.Version)
	}
}

// setValidConfiguration, once every object of the control plane is
// applied, mirrors what the control-plane-operator found wrong with the
// spec it was given (an object of its own the API server refused, a
// component that cannot render); True otherwise. While the CPO has not
// looked at the spec this pass sent, or a report of its is about an
// earlier spec, the condition stays as it was.
func setValidConfiguration(s *scope, hcp *hyperv1.HostedControlPlane) {
	if s.specSent {
		return
	}
	var reported *metav1.Condition
	if hcp != nil {
		reported = meta.FindStatusCondition(hcp.Status.Conditions, hyperv1.ValidConfiguration)
	}
	switch {
	case reported != nil && reported.Status == metav1.ConditionFalse && reported.ObservedGeneration != hcp.Generation:
	case reported != nil && reported.Status == metav1.ConditionFalse:
		s.set(hyperv1.ValidConfiguration, metav1.ConditionFalse, reported.Reason, reported.Message)
	default:
		s.set(hyperv1.ValidConfiguration, metav1.ConditionTrue, hyperv1.AsExpectedReason, "Configuration is valid")
	}
}

// setAvailable mirrors the HostedControlPlane's availability.
func setAvailable(s *scope, hcp *hyperv1.HostedControlPlane) {
	if hcp == nil {
		s.set(hyperv1.Available, metav1.ConditionFalse, hyperv1.WaitingForControlPlaneReason, "The HostedControlPlane does not exist yet")
		return
	}
	if c := meta.FindStatusCondition(hcp.Status.Conditions, hyperv1.Available); c != nil {
		s.set(hyperv1.Available, c.Status, c.Reason, c.Message)
		return
	}
	if hcp.Status.Ready {
		s.set(hyperv1.Available, metav1.ConditionTrue, hyperv1.AsExpectedReason, "The hosted control plane is available")
		return
	}
	s.set(hyperv1.Available, metav1.ConditionFalse, hyperv1.WaitingForControlPlaneReason, "The control-plane-operator has not reported the control plane available yet")
}

// setBlocked sets the blocker's condition False and, on a HostedCluster
// whose control plane does not run yet (Available is not True), says why it
// cannot start: Available and Progressing False with the blocker's reason
// and message, so that `kubectl get hc` shows it. A control plane that is
// Available keeps running and keeps its condition; ReconciliationSucceeded
// says what failed.
func setBlocked(s *scope) {
	b := s.blocked
	if b == nil {
		return
	}
	s.set(b.conditionType, metav1.ConditionFalse, b.reason, b.message)
	if meta.IsStatusConditionTrue(s.hc.Status.Conditions, hyperv1.Available) {
		return
	}
	s.set(hyperv1.Available, metav1.ConditionFalse, b.reason, b.message)
	s.set(hyperv1.Progressing, metav1.ConditionFalse, b.reason, b.message)
}

// setReconciliation says whether the pass ran and succeeded; a refusal
// says why the HO will not act on the HostedCluster.
func setReconciliation(s *scope) {
	if refused := s.refusal; refused != nil {
		s.set(hyperv1.ValidConfiguration, metav1.ConditionFalse, refused.reason, refused.message)
		s.set(hyperv1.Available, metav1.ConditionFalse, refused.reason, refused.message)
		s.set(hyperv1.ReconciliationSucceeded, metav1.ConditionFalse, refused.reason, refused.message)
		s.hc.Status.ControlPlaneOperator = nil
		return
	}
	s.set(hyperv1.ReconciliationActive, metav1.ConditionTrue, hyperv1.AsExpectedReason, "Reconciliation is active")
	if err := s.failure(); err != nil {
		s.set(hyperv1.ReconciliationSucceeded, metav1.ConditionFalse, hyperv1.ReconciliationErrorReason, err.Error())
		return
	}
	s.set(hyperv1.ReconciliationSucceeded, metav1.ConditionTrue, hyperv1.ReconciliationSucceededReason, "Reconciliation completed successfully")
}

func ptrTime(t metav1.Time) *metav1.Time { return &t }
