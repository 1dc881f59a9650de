package hostedcluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/render"
)

// refusalRecheck is how often a HostedCluster refused for a reason outside
// its own spec (its namespace belongs to someone else) is looked at again,
// in case no watch event tells that the reason went away.
const refusalRecheck = 5 * time.Minute

// reconcileNamespace claims the control-plane namespace for this
// HostedCluster before anything is written into it. The claim is the
// namespace's ClusterAnnotation, set in the request that creates it, so two
// HostedClusters that map to one namespace cannot both win: the API server
// creates it once. A namespace that names another HostedCluster, or none,
// is refused (refusal) and nothing is written into it.
func (r *Reconciler) reconcileNamespace(ctx context.Context, s *scope) (ctrl.Result, error) {
	ns, created, err := r.claimNamespace(ctx, s)
	if err != nil {
		// A policy may forbid the namespace.
		return ctrl.Result{}, refusedOr(s, err)
	}
	if owner := ns.Annotations[hyperv1.ClusterAnnotation]; owner != s.key() {
		s.refusal = &refusal{
			reason:  hyperv1.ControlPlaneNamespaceConflictReason,
			message: hyperv1.ControlPlaneNamespaceConflictMessage(s.key(), s.namespace, owner),
		}
		return ctrl.Result{}, nil
	}
	if !ns.DeletionTimestamp.IsZero() {
		return r.awaitNamespaceGone(ctx, s)
	}
	if created {
		s.namespaceCreated = true
		ctrl.LoggerFrom(ctx).Info("Created the control-plane namespace", "namespace", s.namespace)
		// A rebuild, not a creation: the status this pass started from
		// shows a control plane (this pass's release pin, already in
		// s.hc, does not).
		if s.original.Status.Version != nil {
			r.Recorder.Eventf(s.hc, nil, corev1.EventTypeNormal, "ControlPlaneRebuilding", "Reconcile",
				"Control-plane namespace %s was deleted; building the control plane again", s.namespace)
		}
	}
	s.claimed = true
	return ctrl.Result{}, nil
}

// namespaceDeletingMessage is Available's message while someone else
// deletes the control-plane namespace.
func namespaceDeletingMessage(s *scope) string {
	return "Control-plane namespace " + s.namespace + " is being deleted; the control plane will be built again once it is gone"
}

// namespaceGonePoll is how often a deleted control-plane namespace is looked
// at while the namespace controller empties it.
const namespaceGonePoll = 2 * time.Second

// awaitNamespaceGone waits while someone else deletes the control-plane
// namespace, then the next pass builds the control plane again. A
// HostedControlPlane whose CPO went with the namespace cannot be finalized
// by it: once no CPO holds the Lease, the HO lets it go.
func (r *Reconciler) awaitNamespaceGone(ctx context.Context, s *scope) (ctrl.Result, error) {
	s.namespaceDeleting = true
	before := meta.FindStatusCondition(s.original.Status.Conditions, hyperv1.Available)
	if before == nil || before.Reason != hyperv1.ControlPlaneNamespaceDeletingReason {
		r.Recorder.Eventf(s.hc, nil, corev1.EventTypeWarning, hyperv1.ControlPlaneNamespaceDeletingReason, "Reconcile", "%s", namespaceDeletingMessage(s))
	}
	if err := r.releaseHostedControlPlane(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: namespaceGonePoll}, nil
}

// releaseHostedControlPlane removes the finalizers of a HostedControlPlane
// being deleted with its namespace once no CPO holds a valid Lease.
func (r *Reconciler) releaseHostedControlPlane(ctx context.Context, s *scope) error {
	hcp := &hyperv1.HostedControlPlane{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: s.hc.Name}, hcp); err != nil {
		return client.IgnoreNotFound(err)
	}
	if hcp.DeletionTimestamp.IsZero() || len(hcp.Finalizers) == 0 {
		return nil
	}
	if alive, err := r.controlPlaneOperatorAlive(ctx, s); err != nil || alive {
		return err
	}
	patch := client.MergeFrom(hcp.DeepCopy())
	hcp.Finalizers = nil
	if err := r.Client.Patch(ctx, hcp, patch); err != nil {
		return client.IgnoreNotFound(err)
	}
	r.Recorder.Eventf(s.hc, nil, corev1.EventTypeWarning, "ControlPlaneOperatorUnavailable", "ForceTeardown",
		"HostedControlPlane %s/%s is deleted with its namespace and no control-plane-operator holds the Lease; the hypershift-operator removed its finalizers", hcp.Namespace, hcp.Name)
	return nil
}

// claimNamespace returns the control-plane namespace, creating it with this
// HostedCluster's claim when it does not exist. The manager's cache holds
// only namespaces labelled as control-plane namespaces, so a namespace it
// does not hold may still exist (another purpose's, or one the cache has
// not seen yet): the create's AlreadyExists says so, and the namespace is
// then read from the API server. A HostedCluster whose status already shows
// it refused for its namespace reads it first instead, so a refused
// HostedCluster sends no create on every pass; a new one sends only the
// create.
func (r *Reconciler) claimNamespace(ctx context.Context, s *scope) (*corev1.Namespace, bool, error) {
	key := client.ObjectKey{Name: s.namespace}
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, key, ns); !apierrors.IsNotFound(err) {
		return ns, false, wrapNamespaceError(s.namespace, err)
	}
	if refusedForNamespace(s.original) {
		if err := r.APIReader.Get(ctx, key, ns); !apierrors.IsNotFound(err) {
			return ns, false, wrapNamespaceError(s.namespace, err)
		}
	}
	desired := render.Namespace(render.Inputs{HostedCluster: s.hc, Fenced: r.Fencing.Active(), OperatorShard: r.operatorShard()})
	err := r.Client.Create(ctx, desired, client.FieldOwner(FieldOwner))
	if err == nil {
		r.fences.fenceWritten(s.namespace, r.now())
		return desired, true, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return nil, false, fmt.Errorf("failed to create namespace %s: %w", s.namespace, err)
	}
	// Another HostedCluster mapping to this name created it first.
	err = r.APIReader.Get(ctx, key, ns)
	return ns, false, wrapNamespaceError(s.namespace, err)
}

// refusedForNamespace reports whether hc's status says the HO refused it
// because its control-plane namespace is another's.
func refusedForNamespace(hc *hyperv1.HostedCluster) bool {
	c := meta.FindStatusCondition(hc.Status.Conditions, hyperv1.ValidConfiguration)
	return c != nil && c.Status == metav1.ConditionFalse && c.Reason == hyperv1.ControlPlaneNamespaceConflictReason
}

func wrapNamespaceError(name string, err error) error {
	if err != nil {
		return fmt.Errorf("failed to get namespace %s: %w", name, err)
	}
	return nil
}

// ownsNamespace reports whether the control-plane namespace is this
// HostedCluster's to tear down: it names this HostedCluster, or it is gone.
func (r *Reconciler) ownsNamespace(ctx context.Context, s *scope) (bool, error) {
	ns := &corev1.Namespace{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Name: s.namespace}, ns); err != nil {
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, fmt.Errorf("failed to get namespace %s: %w", s.namespace, err)
	}
	return ns.Annotations[hyperv1.ClusterAnnotation] == s.key(), nil
}
