package hostedcluster

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
)

// reportChanges reports what the user is to act on, once per change: the
// conditions that say the HostedCluster waits on them (ReleaseImageTagMoved
// True; ValidReleaseImage, ValidConfiguration and Monitoring False;
// LeaderFencing False for a missing fencing object), a new Lease holder,
// and fenced writes the control-plane-operator reports.
func (r *Reconciler) reportChanges(ctx context.Context, s *scope) {
	r.reportCondition(ctx, s, hyperv1.ReleaseImageTagMoved, metav1.ConditionTrue)
	r.reportCondition(ctx, s, hyperv1.ValidReleaseImage, metav1.ConditionFalse)
	r.reportCondition(ctx, s, hyperv1.ValidConfiguration, metav1.ConditionFalse)
	if s.fence != nil && s.fence.reason == hyperv1.FencingPolicyMissingReason {
		r.reportCondition(ctx, s, hyperv1.LeaderFencing, metav1.ConditionFalse)
	}
	r.reportCondition(ctx, s, hyperv1.Monitoring, metav1.ConditionFalse)
	if s.observed != nil {
		r.reportNewLeader(s)
		r.reportFencedWrites(s, s.observed.hcp)
	}
}

// reportCondition records a Warning event, and logs at info level, the
// reason and message of condition conditionType when it has status and
// they differ from what the pass started with: once per change, not once
// per retry. A pass that starts from the same cached copy as the pass that
// reported (the cache has not caught up with that pass's status yet) does
// not report again. The report is made once the status that shows it is
// written (patchStatus): a pass whose status write is refused (a conflict
// with a concurrent change) reports nothing, and the pass that writes it
// does.
func (r *Reconciler) reportCondition(ctx context.Context, s *scope, conditionType string, status metav1.ConditionStatus) {
	now := meta.FindStatusCondition(s.hc.Status.Conditions, conditionType)
	if now == nil || now.Status != status {
		return
	}
	if before := meta.FindStatusCondition(s.original.Status.Conditions, conditionType); before != nil &&
		before.Status == now.Status && before.Reason == now.Reason && before.Message == now.Message {
		return
	}
	reason, message := now.Reason, now.Message
	r.reportOnce(s, conditionType, reason+"\x00"+message, func() {
		ctrl.LoggerFrom(ctx).Info(conditionType+" is "+string(status)+": "+message, "reason", reason)
		r.Recorder.Eventf(s.hc, nil, corev1.EventTypeWarning, reason, "Reconcile", "%s", message)
	})
}

// reportOnce queues report, made once the pass's status is written, unless
// this process already queued the same what under key from the same
// starting copy of the HostedCluster.
func (r *Reconciler) reportOnce(s *scope, key, what string, report func()) {
	key, what = string(s.hc.UID)+"/"+key, what+"\x00"+s.original.ResourceVersion
	if last, ok := r.reported.Swap(key, what); ok && last == what {
		return
	}
	s.reports = append(s.reports, report)
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
