package hostedcluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/render"
	"github.com/hypershift-le/hypershift/support/apply"
	"github.com/hypershift-le/hypershift/support/conditions"
	"github.com/hypershift-le/hypershift/support/config"
)

// ControlPlaneOperatorImageTag is the release payload's tag for the CPO image.
const ControlPlaneOperatorImageTag = "hypershift"

// ClusterAPIImageTag is the release payload's tag for the cluster-api
// manager image (platform Pod).
const ClusterAPIImageTag = "cluster-api"

// block reports a phase that stops the pass: conditionType False with
// reason and message, Available and Progressing too while the control
// plane has not run (setBlocked), and the change once (reportOnChange). It
// returns err; a waiting err learns the reason and message, for Reconcile.
func (r *Reconciler) block(ctx context.Context, s *scope, conditionType, reason, message string, err error) error {
	conditions.Set(&s.hc.Status.Conditions, s.hc.Generation, conditionType, metav1.ConditionFalse, reason, message)
	setBlocked(s.hc, reason, message)
	r.reportOnChange(ctx, s, conditionType)
	if wait := (*waiting)(nil); errors.As(err, &wait) {
		wait.reason, wait.message = reason, message
	}
	return err
}

// reportOnChange records a Warning event, and logs at info level, the
// reason and message of the False condition conditionType when they differ
// from what the pass started with (reportCondition).
func (r *Reconciler) reportOnChange(ctx context.Context, s *scope, conditionType string) {
	r.reportCondition(ctx, s, conditionType, metav1.ConditionFalse)
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

// waiting is the error of a phase that waits on the HostedCluster's user
// (a pull secret to create, a release tag to push, credentials to fix),
// not a failure of the operator: its condition says what to do, and
// reportOnChange has told it once. The pass is retried with waitBackoff's
// delays, and nothing is logged as an error.
type waiting struct {
	// reason and message are what Available says while the control plane
	// has not run yet (set by block).
	reason, message string
	err             error
	// untilChanged is set when only a change can help: no retry.
	untilChanged bool
}

func (w *waiting) Error() string { return w.err.Error() }
func (w *waiting) Unwrap() error { return w.err }

// waitBackoff spaces the passes of HostedClusters that wait on their
// user: the next pass comes as long after this one as the wait has lasted
// so far, at least 2s and at most 5m (2s, 4s, 8s, ...), restarting once a
// pass gets past the wait. It counts time, not passes: the passes its own
// status writes start do not push the next retry away. A change of the
// HostedCluster or its pull secret starts a pass at once anyway.
type waitBackoff struct {
	clock clock.PassiveClock
	// since holds, by request, when its wait began.
	since sync.Map
}

const (
	minWaitRetry = 2 * time.Second
	maxWaitRetry = 5 * time.Minute
)

// When returns the delay before req's next pass.
func (b *waitBackoff) When(req reconcile.Request) time.Duration {
	now := b.clock.Now()
	began, _ := b.since.LoadOrStore(req, now)
	return min(max(now.Sub(began.(time.Time)), minWaitRetry), maxWaitRetry)
}

// Forget ends req's wait.
func (b *waitBackoff) Forget(req reconcile.Request) { b.since.Delete(req) }

// setBlocked reports, on a HostedCluster whose control plane does not
// run yet (Available is not True), why it cannot start: Available and
// Progressing False with the failing phase's reason and message, so that
// `kubectl get hc` shows it. A control plane that is Available keeps
// running and keeps its condition; ReconciliationSucceeded says what failed.
func setBlocked(hc *hyperv1.HostedCluster, reason, message string) {
	if meta.IsStatusConditionTrue(hc.Status.Conditions, hyperv1.Available) {
		return
	}
	conditions.Set(&hc.Status.Conditions, hc.Generation, hyperv1.Available, metav1.ConditionFalse, reason, message)
	conditions.Set(&hc.Status.Conditions, hc.Generation, hyperv1.Progressing, metav1.ConditionFalse, reason, message)
}

// upperFirst starts a message with a capital, as condition messages do.
func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// controlPlaneOperatorImage picks the CPO image: the annotation, else the
// payload's hypershift image, else the operator's default.
func (r *Reconciler) controlPlaneOperatorImage(s *scope) string {
	if image := s.hc.Annotations[hyperv1.ControlPlaneOperatorImageAnnotation]; image != "" {
		return image
	}
	if image, ok := s.release.ComponentImage(ControlPlaneOperatorImageTag); ok {
		return image
	}
	return r.DefaultControlPlaneOperatorImage
}

// clusterAPIImage picks the cluster-api manager's image: the annotation,
// else the payload's; "" when neither names one.
func clusterAPIImage(s *scope) string {
	if image := s.hc.Annotations[hyperv1.ClusterAPIManagerImageAnnotation]; image != "" {
		return image
	}
	image, _ := s.release.ComponentImage(ClusterAPIImageTag)
	return image
}

// reconcileControlPlane applies, in order, every object of the control
// plane. Inputs that cannot render (no CPO image) set
// ValidConfiguration=False and are not retried until something changes; an
// object the API server refuses (apply.Refused) sets it False with the API
// server's words, and is retried with waitBackoff's delays. Once every
// object is applied, reconcileStatus sets ValidConfiguration from what the
// control-plane-operator reports (setValidConfiguration).
func (r *Reconciler) reconcileControlPlane(ctx context.Context, s *scope) (ctrl.Result, error) {
	in := render.Inputs{
		HostedCluster:               s.hc,
		ReleaseImage:                s.releaseImage,
		ControlPlaneOperatorImage:   r.controlPlaneOperatorImage(s),
		ControlPlaneOperatorTimings: r.ControlPlaneOperatorTimings,
		InsecureRegistries:          r.InsecureRegistries,
		ClusterAPIImage:             clusterAPIImage(s),
		ClusterAPITimings:           config.ClusterAPITimings,
	}
	if err := in.Validate(); err != nil {
		// Only a change of the HostedCluster (which starts a pass) or of
		// the operator's flags can fix it: no retry.
		return ctrl.Result{}, r.block(ctx, s, hyperv1.ValidConfiguration, hyperv1.InvalidConfigurationReason, upperFirst(err.Error()), &waiting{err: err, untilChanged: true})
	}

	// The manager's client reads Secrets past its cache (ClientOptions)
	// and every other kind from it.
	applier := r.applier()
	for _, obj := range []client.Object{
		render.Namespace(in),
		render.PullSecret(in, s.pullSecret),
		render.HostedControlPlane(in),
		render.ControlPlaneOperatorServiceAccount(in),
		render.ControlPlaneOperatorRole(in),
		render.ControlPlaneOperatorRoleBinding(in),
		render.ControlPlaneOperatorAuthDelegator(in),
	} {
		sent, err := applier.Apply(ctx, obj)
		if err != nil {
			return ctrl.Result{}, r.refusedOr(ctx, s, err)
		}
		if _, ok := obj.(*hyperv1.HostedControlPlane); ok {
			s.specSent = sent
		}
	}
	// Fence before the CPO can run: after its RBAC, before its Deployment.
	if err := r.reconcileFencing(ctx, s, in); err != nil {
		return ctrl.Result{}, err
	}
	if _, err := applier.Apply(ctx, render.ControlPlaneOperatorDeployment(in)); err != nil {
		return ctrl.Result{}, r.refusedOr(ctx, s, err)
	}
	// Platform Pod: the machines' manager and its Cluster, once the CPO,
	// which issues its webhook certificate and runs the machines, is there.
	for _, obj := range render.ClusterAPIObjects(in) {
		if _, err := applier.Apply(ctx, obj); err != nil {
			return ctrl.Result{}, r.refusedOr(ctx, s, err)
		}
	}
	s.applied = true
	return ctrl.Result{}, r.applyPausedUntil(ctx, s)
}

// refusedOr returns err, blocking the pass with ValidConfiguration=False
// (RefusedByAPIServer, in the API server's words) when it is a refusal of
// an object rendered from the spec: the HostedCluster then waits on its
// user, with one event per change and no error log.
func (r *Reconciler) refusedOr(ctx context.Context, s *scope, err error) error {
	if !apply.Refused(err) {
		return err
	}
	message := apply.Refusal(err)
	return r.block(ctx, s, hyperv1.ValidConfiguration, hyperv1.RefusedByAPIServerReason, message, &waiting{err: err})
}

// applyPausedUntil makes the HostedControlPlane's spec.pausedUntil match
// the HostedCluster's, under its own field owner: it is the one field the
// HO still writes while a cluster is paused.
func (r *Reconciler) applyPausedUntil(ctx context.Context, s *scope) error {
	hcp := &hyperv1.HostedControlPlane{}
	key := client.ObjectKey{Namespace: s.namespace, Name: s.hc.Name}
	if err := r.Client.Get(ctx, key, hcp); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("failed to get HostedControlPlane %s: %w", key, err)
	}
	want, have := s.hc.Spec.PausedUntil, hcp.Spec.PausedUntil
	if (want == nil && have == nil) || (want != nil && have != nil && *want == *have) {
		return nil
	}
	spec := map[string]any{}
	if want != nil {
		spec["pausedUntil"] = *want
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": hyperv1.GroupVersion.String(),
		"kind":       "HostedControlPlane",
		"metadata":   map[string]any{"namespace": key.Namespace, "name": key.Name},
		"spec":       spec,
	}}
	if err := r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(pauseFieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("failed to set pausedUntil on HostedControlPlane %s: %w", key, err)
	}
	return nil
}

// paused reports whether spec.pausedUntil pauses the cluster now, and until
// when (zero for "true").
func (r *Reconciler) paused(s *scope) (bool, time.Time) {
	paused, until, err := hyperv1.ParsePausedUntil(s.hc.Spec.PausedUntil, r.now())
	if err != nil {
		// The API server refuses such values; treat a stored one as not paused.
		return false, time.Time{}
	}
	return paused, until
}

// reconcilePaused only passes the pause on to the HostedControlPlane and
// says so in status; it wakes up when the pause ends.
func (r *Reconciler) reconcilePaused(ctx context.Context, s *scope, until time.Time) (ctrl.Result, error) {
	message := "Reconciliation is paused until spec.pausedUntil is removed"
	result := ctrl.Result{}
	if !until.IsZero() {
		message = "Reconciliation is paused until " + until.UTC().Format(time.RFC3339)
		result.RequeueAfter = until.Sub(r.now())
	}
	conditions.Set(&s.hc.Status.Conditions, s.hc.Generation, hyperv1.ReconciliationActive, metav1.ConditionFalse, hyperv1.ReconciliationPausedReason, message)
	// Even a paused cluster writes into its namespace only if it is its own.
	if owned, err := r.ownsNamespace(ctx, s); err != nil || !owned {
		return result, err
	}
	return result, r.applyPausedUntil(ctx, s)
}

func (r *Reconciler) setReconciliationSucceeded(s *scope, err error) {
	conditions.Set(&s.hc.Status.Conditions, s.hc.Generation, hyperv1.ReconciliationActive, metav1.ConditionTrue, hyperv1.AsExpectedReason, "Reconciliation is active")
	if err != nil {
		conditions.Set(&s.hc.Status.Conditions, s.hc.Generation, hyperv1.ReconciliationSucceeded, metav1.ConditionFalse, hyperv1.ReconciliationErrorReason, err.Error())
		return
	}
	conditions.Set(&s.hc.Status.Conditions, s.hc.Generation, hyperv1.ReconciliationSucceeded, metav1.ConditionTrue, hyperv1.ReconciliationSucceededReason, "Reconciliation completed successfully")
}
