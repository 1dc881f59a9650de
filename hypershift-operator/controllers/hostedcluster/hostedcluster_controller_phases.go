package hostedcluster

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/controllers/nodepool"
	"github.com/hypershift-le/hypershift/hypershift-operator/render"
	"github.com/hypershift-le/hypershift/support/apply"
	"github.com/hypershift-le/hypershift/support/config"
)

// ControlPlaneOperatorImageTag is the release payload's tag for the CPO image.
const ControlPlaneOperatorImageTag = "hypershift"

// ClusterAPIImageTag is the release payload's tag for the cluster-api
// manager image (platform Pod).
const ClusterAPIImageTag = "cluster-api"

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
// plane. Inputs that cannot render (no CPO image) block the pass on
// ValidConfiguration and are not retried until something changes; an
// object the API server refuses (apply.Refused) blocks it with the API
// server's words, and is retried with waitBackoff's delays. Once every
// object is applied, ValidConfiguration follows what the
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
		Fenced:                      r.Fencing.Active(),
		OperatorShard:               r.operatorShard(),
	}
	keys, wait, err := r.encryptionKeys(ctx, s.hc)
	if err != nil {
		return ctrl.Result{}, s.block(hyperv1.ValidConfiguration, hyperv1.InvalidConfigurationReason, upperFirst(err.Error()), wait, err)
	}
	in.EncryptionKeys = keys
	in.EtcdRestore = s.restore
	in.MachineImage, _ = s.release.ComponentImage(nodepool.MachineImageTag)
	in.SandboxImage, _ = s.release.ComponentImage(nodepool.SandboxImageTag)
	if err := in.Validate(); err != nil {
		// Only a change of the HostedCluster (which starts a pass) or of
		// the operator's flags can fix it: no retry.
		return ctrl.Result{}, s.block(hyperv1.ValidConfiguration, hyperv1.InvalidConfigurationReason, upperFirst(err.Error()), waitsForChange, err)
	}

	// The manager's client reads Secrets past its cache (ClientOptions)
	// and every other kind from it.
	applier := r.applierIn(s)
	objects := []client.Object{render.Namespace(in), render.PullSecret(in, s.pullSecret)}
	// The keys before the HostedControlPlane that names them.
	for _, key := range render.SecretEncryptionKeys(in) {
		objects = append(objects, key)
	}
	// What the members restore with, before the HostedControlPlane whose
	// etcd mounts it.
	for _, secret := range render.EtcdRestoreSecrets(in) {
		objects = append(objects, secret)
	}
	for _, obj := range append(objects,
		render.HostedControlPlane(in),
		render.ControlPlaneOperatorServiceAccount(in),
		render.ControlPlaneOperatorRole(in),
		render.ControlPlaneOperatorRoleBinding(in),
		render.ControlPlaneOperatorAuthDelegator(in),
	) {
		sent, err := applier.Apply(ctx, obj)
		if err != nil {
			return ctrl.Result{}, refusedOr(s, err)
		}
		switch obj.(type) {
		case *hyperv1.HostedControlPlane:
			s.specSent = sent
		case *corev1.Namespace:
			if sent {
				// Its fencing label may have changed.
				r.fences.fenceWritten(s.namespace, r.now())
			}
		}
	}
	if err := r.deleteStaleEncryptionKeys(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	// Before the CPO, which runs the kube-apiserver and the machines.
	if err := r.reconcileNetworkPolicies(ctx, s, in, applier); err != nil {
		return ctrl.Result{}, err
	}
	// Fence before the CPO can run: after its RBAC, before its Deployment.
	if err := r.reconcileFencing(ctx, s, in); err != nil {
		return ctrl.Result{}, err
	}
	if budget := render.ControlPlaneOperatorDisruptionBudget(in); budget != nil {
		if _, err := applier.Apply(ctx, budget); err != nil {
			return ctrl.Result{}, refusedOr(s, err)
		}
	}
	if _, err := applier.Apply(ctx, render.ControlPlaneOperatorDeployment(in)); err != nil {
		return ctrl.Result{}, refusedOr(s, err)
	}
	// Platform Pod: the machines' manager and its Cluster, once the CPO,
	// which issues its webhook certificate and runs the machines, is there.
	for _, obj := range render.ClusterAPIObjects(in) {
		if _, err := applier.Apply(ctx, obj); err != nil {
			return ctrl.Result{}, refusedOr(s, err)
		}
	}
	s.applied = true
	return ctrl.Result{}, r.applyPausedUntil(ctx, s)
}

// refusedOr returns err, blocking the pass with ValidConfiguration=False
// (RefusedByAPIServer, in the API server's words) when it is a refusal of
// an object rendered from the spec: the HostedCluster then waits on its
// user, with one event per change and no error log.
func refusedOr(s *scope, err error) error {
	if !apply.Refused(err) {
		return err
	}
	return s.block(hyperv1.ValidConfiguration, hyperv1.RefusedByAPIServerReason, apply.Refusal(err), waitsOnUser, err)
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
	s.pauseMessage = "Reconciliation is paused until spec.pausedUntil is removed"
	result := ctrl.Result{}
	if !until.IsZero() {
		s.pauseMessage = "Reconciliation is paused until " + until.UTC().Format(time.RFC3339)
		result.RequeueAfter = until.Sub(r.now())
	}
	// Even a paused cluster writes into its namespace only if it is its own.
	if owned, err := r.ownsNamespace(ctx, s); err != nil || !owned {
		return result, err
	}
	return result, r.applyPausedUntil(ctx, s)
}
