package hostedcluster

import (
	"context"
	"fmt"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/conditions"
	"github.com/hypershift-le/hypershift/support/leasestate"
)

// maxHistory bounds status.version.history; the oldest entries go first.
const maxHistory = 50

// reconcileStatus derives Available, Progressing, the version history, the
// API endpoint and the CPO Lease holder from the HostedControlPlane, the CPO Deployment and
// the Lease. applyErr is the pass's error, if any: a release the HO could
// not apply is not rolling out, and says why.
func (r *Reconciler) reconcileStatus(ctx context.Context, s *scope, applyErr error) (ctrl.Result, error) {
	hcp := &hyperv1.HostedControlPlane{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: s.hc.Name}, hcp); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("failed to get HostedControlPlane: %w", err)
		}
		hcp = nil
	}
	deployment := &appsv1.Deployment{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: hyperv1.ControlPlaneOperatorName}, deployment); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("failed to get the control-plane-operator Deployment: %w", err)
		}
		deployment = nil
	}
	lease := &coordinationv1.Lease{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: hyperv1.ControlPlaneOperatorLeaseName}, lease); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("failed to get the control-plane-operator Lease: %w", err)
		}
		lease = nil
	}

	if s.applied {
		r.setValidConfiguration(ctx, s, hcp)
	}
	r.setVersion(s, hcp, deployment, applyErr)
	// Available is set once per pass: setting it twice (from the
	// HostedControlPlane, then Unknown for a silent Lease) would move its
	// lastTransitionTime on every pass, and write status every time.
	if silent, duration := r.silentLease(lease); silent {
		conditions.Set(&s.hc.Status.Conditions, s.hc.Generation, hyperv1.Available, metav1.ConditionUnknown, hyperv1.ControlPlaneOperatorSilentReason,
			fmt.Sprintf("No control-plane-operator has renewed Lease %s/%s for its lease duration (%s): nothing is known to run this control plane, and its last reported status may be stale",
				s.namespace, hyperv1.ControlPlaneOperatorLeaseName, duration))
	} else {
		setAvailable(s.hc, hcp)
	}
	if hcp != nil {
		s.hc.Status.ControlPlaneEndpoint = hcp.Status.ControlPlaneEndpoint.DeepCopy()
	}
	s.hc.Status.ControlPlaneOperator = leaderStatus(lease)
	r.reportNewLeader(s)
	r.reportFencedWrites(s, hcp)
	return r.observeFencing(ctx, s, lease)
}

// ControlPlaneOperatorSilentReason is hyperv1's, kept here for those that
// name it from this package.
const ControlPlaneOperatorSilentReason = hyperv1.ControlPlaneOperatorSilentReason

// silentLease reports whether the CPO Lease has gone unchanged for its
// lease duration (leaseClock), and that duration.
func (r *Reconciler) silentLease(lease *coordinationv1.Lease) (bool, time.Duration) {
	if lease == nil || r.leases == nil {
		return false, 0
	}
	return r.leases.silent(client.ObjectKeyFromObject(lease))
}

// reportNewLeader records an event when the Lease names a holder other
// than the one status showed: what SREs grep for ("became leader").
func (r *Reconciler) reportNewLeader(s *scope) {
	now := s.hc.Status.ControlPlaneOperator
	if now == nil || now.HolderIdentity == "" {
		return
	}
	if before := s.original.Status.ControlPlaneOperator; before != nil && before.HolderIdentity == now.HolderIdentity {
		return
	}
	r.Recorder.Eventf(s.hc, nil, corev1.EventTypeNormal, "LeaderElected", "Elect",
		"control-plane-operator %s became leader (Lease %s/%s, %d transitions)", now.HolderIdentity, s.namespace, hyperv1.ControlPlaneOperatorLeaseName, now.LeaseTransitions)
}

// reportFencedWrites relays each new report of the HostedControlPlane's
// WritesFenced condition as a Warning event on the HostedCluster: the API
// server refused writes of a control-plane-operator that did not hold the
// Lease. Once per report (the condition's message counts the writes), as
// far as this process remembers: a restarted hypershift-operator relays a
// standing report once more.
func (r *Reconciler) reportFencedWrites(s *scope, hcp *hyperv1.HostedControlPlane) {
	if hcp == nil {
		return
	}
	fenced := meta.FindStatusCondition(hcp.Status.Conditions, hyperv1.WritesFenced)
	if fenced == nil || fenced.Status != metav1.ConditionTrue {
		return
	}
	if last, ok := r.reported.Swap(string(s.hc.UID)+"/"+hyperv1.WritesFenced, fenced.Message); ok && last == fenced.Message {
		return
	}
	r.Recorder.Eventf(s.hc, nil, corev1.EventTypeWarning, hyperv1.WritesFenced, "Fence",
		"The fence held: the control-plane-operator of HostedControlPlane %s/%s reports: %s", hcp.Namespace, hcp.Name, fenced.Message)
}

// leaderStatus is what status shows of the Lease: only what changes with
// leadership, never renewTime, so a renewal causes no status write.
func leaderStatus(lease *coordinationv1.Lease) *hyperv1.ControlPlaneOperatorStatus {
	if lease == nil {
		return nil
	}
	status := &hyperv1.ControlPlaneOperatorStatus{HolderIdentity: leasestate.Holder(lease)}
	if lease.Spec.LeaseTransitions != nil {
		status.LeaseTransitions = *lease.Spec.LeaseTransitions
	}
	return status
}

// setVersion records the desired release, the pinned payload
// (reconcileRelease), and keeps the history: a new pinned payload starts a
// Partial entry, which completes only when the CPO
// Deployment runs that release, rolled out, and the HostedControlPlane
// reports it ready. Until then Progressing is True, with the reason that
// holds it back.
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
		conditions.Set(&s.hc.Status.Conditions, s.hc.Generation, hyperv1.Progressing, metav1.ConditionFalse, hyperv1.AsExpectedReason, "Release "+desired.Version+" is rolled out")
	case !operatorRunsIt && applyErr != nil:
		conditions.Set(&s.hc.Status.Conditions, s.hc.Generation, hyperv1.Progressing, metav1.ConditionTrue, hyperv1.RolloutBlockedReason,
			"Release "+desired.Version+" is not rolled out: the control-plane-operator Deployment cannot be updated: "+applyErr.Error())
	case !operatorRunsIt:
		conditions.Set(&s.hc.Status.Conditions, s.hc.Generation, hyperv1.Progressing, metav1.ConditionTrue, hyperv1.ControlPlaneOperatorRollingOutReason,
			"Rolling out release "+desired.Version+": the control-plane-operator does not run it yet")
	default:
		conditions.Set(&s.hc.Status.Conditions, s.hc.Generation, hyperv1.Progressing, metav1.ConditionTrue, hyperv1.RollingOutReason, "Rolling out release "+desired.Version)
	}
}

// rolledOut reports whether the CPO Deployment is rendered for release and
// the Deployment controller has rolled that template out to every replica.
func rolledOut(d *appsv1.Deployment, release string) bool {
	if d == nil || len(d.Spec.Template.Spec.Containers) == 0 {
		return false
	}
	rendered := false
	for _, env := range d.Spec.Template.Spec.Containers[0].Env {
		if env.Name == hyperv1.OperateOnReleaseImageEnv {
			rendered = env.Value == release
		}
	}
	replicas := int32(1)
	if d.Spec.Replicas != nil {
		replicas = *d.Spec.Replicas
	}
	return rendered && d.Status.ObservedGeneration >= d.Generation &&
		d.Status.UpdatedReplicas == replicas && d.Status.Replicas == replicas
}

// setValidConfiguration, once every object of the control plane is
// applied, mirrors what the control-plane-operator found wrong with the
// spec it was given (an object of its own the API server refused, a
// component that cannot render), with one event per change; True
// otherwise. While the CPO has not looked at the spec this pass sent, or a
// report of its is about an earlier spec, the condition stays as it was.
func (r *Reconciler) setValidConfiguration(ctx context.Context, s *scope, hcp *hyperv1.HostedControlPlane) {
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
		conditions.Set(&s.hc.Status.Conditions, s.hc.Generation, hyperv1.ValidConfiguration, metav1.ConditionFalse, reported.Reason, reported.Message)
		r.reportOnChange(ctx, s, hyperv1.ValidConfiguration)
	default:
		conditions.Set(&s.hc.Status.Conditions, s.hc.Generation, hyperv1.ValidConfiguration, metav1.ConditionTrue, hyperv1.AsExpectedReason, "Configuration is valid")
	}
}

// setAvailable mirrors the HostedControlPlane's availability.
func setAvailable(hc *hyperv1.HostedCluster, hcp *hyperv1.HostedControlPlane) {
	if hcp == nil {
		conditions.Set(&hc.Status.Conditions, hc.Generation, hyperv1.Available, metav1.ConditionFalse, hyperv1.WaitingForControlPlaneReason, "The HostedControlPlane does not exist yet")
		return
	}
	if c := meta.FindStatusCondition(hcp.Status.Conditions, hyperv1.Available); c != nil {
		conditions.Set(&hc.Status.Conditions, hc.Generation, hyperv1.Available, c.Status, c.Reason, c.Message)
		return
	}
	if hcp.Status.Ready {
		conditions.Set(&hc.Status.Conditions, hc.Generation, hyperv1.Available, metav1.ConditionTrue, hyperv1.AsExpectedReason, "The hosted control plane is available")
		return
	}
	conditions.Set(&hc.Status.Conditions, hc.Generation, hyperv1.Available, metav1.ConditionFalse, hyperv1.WaitingForControlPlaneReason, "The control-plane-operator has not reported the control plane available yet")
}

func ptrTime(t metav1.Time) *metav1.Time { return &t }
