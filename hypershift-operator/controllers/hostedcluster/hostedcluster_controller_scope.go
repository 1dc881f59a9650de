package hostedcluster

import (
	"errors"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/render"
	"github.com/hypershift-le/hypershift/support/releaseinfo"
)

// scope is what one pass over one HostedCluster found and decided. Phases
// fill it with facts, errors and refusals among them, and never set a
// condition; computeStatus turns it into status once, when the pass ends.
type scope struct {
	hc       *hyperv1.HostedCluster
	original *hyperv1.HostedCluster
	// namespace is the control-plane namespace.
	namespace string

	// pauseMessage, when not empty, says until when spec.pausedUntil
	// pauses the cluster (ReconciliationActive's message): the pass did
	// nothing else.
	pauseMessage string

	// release is the payload, once read.
	release *releaseinfo.ReleaseImage
	// releaseImage is release's pull spec pinned by digest: what the
	// HostedControlPlane and the control-plane-operator are given.
	releaseImage string
	// pin is the payload the control plane is pinned to; digest is the one
	// the spec's pull spec names now, another when its tag moved.
	pin    pinned
	digest string
	// pullSecret is the .dockerconfigjson of the HostedCluster's pull
	// secret, read once per reconcile.
	pullSecret []byte

	// blocked is what stopped the pass before its control plane was
	// applied, if anything did.
	blocked *blocker
	// refusal is why the HO will not act on the HostedCluster until
	// something outside the pass changes (its namespace belongs to another).
	refusal *refusal
	// namespaceDeleting is set while someone else deletes the control-plane
	// namespace.
	namespaceDeleting bool
	// claimed is set once the control-plane namespace is known to be this
	// HostedCluster's, and not being deleted: only then does status show
	// what is in it.
	claimed bool
	// namespaceCreated is set when this pass created the control-plane
	// namespace: whatever is in it, this pass wrote.
	namespaceCreated bool
	// applied is set once this pass applied every object of the control
	// plane: ValidConfiguration then follows the HostedControlPlane.
	applied bool
	// specSent is set when this pass changed the HostedControlPlane: what
	// the cache shows of it, its conditions among it, is older than that.
	specSent bool
	// fenced is set when this pass saw to the namespace's fence (its label)
	// and found every cluster-wide fencing object: the fence is then
	// observed.
	fenced bool
	// fence is what the pass found of the fence: LeaderFencing's value, or
	// nil when the pass did not get to it (the condition keeps its value).
	fence *finding
	// verifiedFence is what LeaderFencing=True is for, when the pass found
	// it True (status.verifiedFence).
	verifiedFence *hyperv1.VerifiedFence
	// monitoring is Monitoring's value; nil when the pass did not get to
	// it, monitoringOff when the operator runs without monitoring.
	monitoring    *finding
	monitoringOff bool
	// kubeconfig names the admin kubeconfig copy, once it was applied.
	kubeconfig string
	// observed is what the pass read of the control plane, once it was
	// claimed; nil when it was not, or a read failed.
	observed *observation
	// err is the phases' error, if any: a release that could not be
	// applied is not rolling out, and says why.
	err error
	// observeErr is why the control plane could not be observed.
	observeErr error

	// restore is, for a cluster whose etcd restores from a backup, what
	// its control-plane namespace is given (reconcileRestore); nil
	// otherwise. restoreMessage says from what.
	restore        *render.EtcdRestore
	restoreMessage string

	// reports are the changes reportCondition found, made once the status
	// that shows them is written.
	reports []func()
	// written is the status this pass wrote before its end (a new release
	// pin), if any: the final write compares with it, not with original.
	written *hyperv1.HostedClusterStatus
}

// key is the HostedCluster's <namespace>/<name>, the value of the cluster
// annotation on everything the HO creates for it.
func (s *scope) key() string {
	return render.ClusterKey(s.hc)
}

// finding is a condition's value as a phase found it.
type finding struct {
	status          metav1.ConditionStatus
	reason, message string
}

// observation is what a pass read of its control plane: each object is nil
// when it does not exist.
type observation struct {
	hcp        *hyperv1.HostedControlPlane
	deployment *appsv1.Deployment
	lease      *coordinationv1.Lease
	// silentFor is the Lease's duration when it has gone that long
	// without a change (leaseClock); zero otherwise.
	silentFor time.Duration
	// lostNodes says why the control plane cannot serve while nodes are
	// lost (observeLostNodes); empty otherwise.
	lostNodes string
}

// waitKind says how a blocked pass is retried.
type waitKind int

const (
	// notWaiting is a failure of the operator: the pass returns its error.
	notWaiting waitKind = iota
	// waitsOnUser waits on the HostedCluster's user (a pull secret to
	// create, a release tag to push, credentials to fix): retried with
	// waitBackoff's delays, with no error log.
	waitsOnUser
	// waitsForChange waits until the HostedCluster changes: no retry.
	waitsForChange
)

// blocker is a phase's finding that stops the pass: conditionType False
// with reason and message, and Available and Progressing too while the
// control plane has not run (computeStatus). Its condition is reported
// once per change.
type blocker struct {
	conditionType, reason, message string
	wait                           waitKind
}

// block records that the pass stops on what a phase found, and returns err,
// the phase's error, for the pass to end with.
func (s *scope) block(conditionType, reason, message string, wait waitKind, err error) error {
	s.blocked = &blocker{conditionType: conditionType, reason: reason, message: message, wait: wait}
	return err
}

// refusal is input the HO will not act on until something changes outside
// the pass: ValidConfiguration, Available and ReconciliationSucceeded are
// False with its reason, one event reports it when it first appears, and it
// is not retried with back-off.
type refusal struct {
	reason, message string
}

// stopped reports whether a phase found a reason to stop the pass that is
// not an error.
func (s *scope) stopped() bool {
	return s.refusal != nil
}

// failure is the pass's error: the phases' and the observation's.
func (s *scope) failure() error {
	if s.observeErr == nil {
		return s.err
	}
	return errors.Join(s.err, s.observeErr)
}
