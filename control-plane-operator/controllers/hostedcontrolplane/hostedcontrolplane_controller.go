// Package hostedcontrolplane is the control-plane-operator's
// HostedControlPlane controller: it applies the hosted control plane's
// components, reports their availability in status, and removes them before
// it lets the HostedControlPlane go. It runs only on the replica that holds
// the Lease, and writes nothing when the HostedControlPlane asks for a
// release other than the one this operator was rolled out for.
package hostedcontrolplane

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/control-plane-operator/render"
	"github.com/hypershift-le/hypershift/support/releaseinfo"
	"github.com/hypershift-le/hypershift/support/upsert"
)

const (
	// FieldOwner is the server-side apply field manager of the CPO.
	FieldOwner = "control-plane-operator"
	// Finalizer holds a HostedControlPlane until its components are gone.
	Finalizer = "hypershift.openshift.io/control-plane-operator"
	// PullSecretName is the pull secret the hypershift-operator copies into
	// the control-plane namespace.
	PullSecretName = "pull-secret"

	componentPoll = 10 * time.Second
)

// Reconciler reconciles one HostedControlPlane: the one it was rendered for.
// Another HostedControlPlane in its namespace is never read or written.
type Reconciler struct {
	// Name is the name of the HostedControlPlane to reconcile.
	Name string
	// Client reads from the namespace-scoped cache and writes.
	Client client.Client
	// APIReader reads the pull secret past the cache.
	APIReader client.Reader
	// Releases resolves the release payload.
	Releases releaseinfo.Provider
	// OperateOnReleaseImage is the release this CPO was rolled out for
	// ($OPERATE_ON_RELEASE_IMAGE); empty turns the guard off.
	OperateOnReleaseImage string
	// Clock is the time source; tests may replace it.
	Clock clock.PassiveClock
}

// Reconcile brings the components in line with the HostedControlPlane.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, reterr error) {
	log := ctrl.LoggerFrom(ctx)
	if req.Name != r.Name {
		return ctrl.Result{}, nil
	}
	hcp := &hyperv1.HostedControlPlane{}
	if err := r.Client.Get(ctx, req.NamespacedName, hcp); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}

	// The version guard comes before any write: an outdated CPO must never
	// undo its successor's work.
	if r.OperateOnReleaseImage != "" && r.OperateOnReleaseImage != hcp.Spec.ReleaseImage {
		releaseMismatch.Set(1)
		log.Info("Not reconciling: this control-plane-operator was rolled out for another release",
			"operateOnReleaseImage", r.OperateOnReleaseImage, "releaseImage", hcp.Spec.ReleaseImage)
		return ctrl.Result{}, nil
	}
	releaseMismatch.Set(0)

	if !hcp.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, hcp)
	}
	if paused, until, err := hyperv1.ParsePausedUntil(hcp.Spec.PausedUntil, r.now()); err == nil && paused {
		log.Info("Reconciliation is paused", "pausedUntil", *hcp.Spec.PausedUntil)
		if until.IsZero() {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{RequeueAfter: until.Sub(r.now())}, nil
	}
	if !controllerutil.ContainsFinalizer(hcp, Finalizer) {
		patch := client.MergeFromWithOptions(hcp.DeepCopy(), client.MergeFromWithOptimisticLock{})
		controllerutil.AddFinalizer(hcp, Finalizer)
		if err := r.Client.Patch(ctx, hcp, patch); err != nil {
			return ctrl.Result{}, fmt.Errorf("failed to add finalizer: %w", err)
		}
	}

	original := hcp.DeepCopy()
	defer func() {
		if equality.Semantic.DeepEqual(original.Status, hcp.Status) {
			return
		}
		if err := r.Client.Status().Update(ctx, hcp); err != nil && !apierrors.IsNotFound(err) {
			reterr = errors.Join(reterr, fmt.Errorf("failed to update status: %w", err))
		}
	}()
	result, err := r.reconcileNormal(ctx, hcp)
	if err != nil && isFenced(err) {
		r.reportFenced(ctx, hcp.Namespace, err)
	}
	return result, err
}

func (r *Reconciler) reconcileNormal(ctx context.Context, hcp *hyperv1.HostedControlPlane) (ctrl.Result, error) {
	release, err := r.release(ctx, hcp)
	if err != nil {
		setCondition(hcp, hyperv1.ValidReleaseImage, false, "ReleaseImageUnavailable", err.Error())
		return ctrl.Result{}, err
	}
	setCondition(hcp, hyperv1.ValidReleaseImage, true, "AsExpected", "Release image "+hcp.Spec.ReleaseImage+" is valid: version "+release.Version)

	components, err := render.Components(render.Inputs{HostedControlPlane: hcp, Release: release})
	if err != nil {
		setCondition(hcp, hyperv1.ValidConfiguration, false, "InvalidConfiguration", err.Error())
		return ctrl.Result{}, err
	}
	setCondition(hcp, hyperv1.ValidConfiguration, true, "AsExpected", "Configuration is valid")

	apply := upsert.Applier{Client: r.Client, FieldOwner: FieldOwner}
	for _, component := range components {
		objects := []client.Object{component.Deployment}
		if component.Service != nil {
			objects = append(objects, component.Service)
		}
		for _, obj := range objects {
			if _, err := apply.Apply(ctx, obj); err != nil {
				return ctrl.Result{}, err
			}
		}
	}
	if err := r.setStatus(ctx, hcp, release, components); err != nil {
		return ctrl.Result{}, err
	}
	if !hcp.Status.Ready {
		return ctrl.Result{RequeueAfter: componentPoll}, nil
	}
	return ctrl.Result{}, nil
}

// release reads the payload with the pull secret the HO copied next to us.
func (r *Reconciler) release(ctx context.Context, hcp *hyperv1.HostedControlPlane) (*releaseinfo.ReleaseImage, error) {
	secret := &corev1.Secret{}
	key := client.ObjectKey{Namespace: hcp.Namespace, Name: hcp.Spec.PullSecret.Name}
	if err := r.APIReader.Get(ctx, key, secret); err != nil {
		return nil, fmt.Errorf("failed to get pull secret %s: %w", key, err)
	}
	release, err := r.Releases.Lookup(ctx, hcp.Spec.ReleaseImage, secret.Data[corev1.DockerConfigJsonKey])
	if err != nil {
		return nil, fmt.Errorf("failed to read release image %s: %w", hcp.Spec.ReleaseImage, err)
	}
	return release, nil
}

// reconcileDelete removes every component, waits until they are gone, and
// then lets the HostedControlPlane go.
func (r *Reconciler) reconcileDelete(ctx context.Context, hcp *hyperv1.HostedControlPlane) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(hcp, Finalizer) {
		return ctrl.Result{}, nil
	}
	remaining := 0
	for _, name := range render.ComponentNames {
		for _, obj := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}} {
			obj.SetNamespace(hcp.Namespace)
			obj.SetName(name)
			err := r.Client.Delete(ctx, obj)
			switch {
			case apierrors.IsNotFound(err):
			case err != nil:
				return ctrl.Result{}, fmt.Errorf("failed to delete %s %s: %w", name, fmt.Sprintf("%T", obj), err)
			default:
				remaining++
			}
		}
	}
	if remaining > 0 {
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	patch := client.MergeFrom(hcp.DeepCopy())
	controllerutil.RemoveFinalizer(hcp, Finalizer)
	if err := r.Client.Patch(ctx, hcp, patch); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("failed to remove finalizer: %w", err)
	}
	ctrl.LoggerFrom(ctx).Info("Components removed; HostedControlPlane finalized")
	return ctrl.Result{}, nil
}

func (r *Reconciler) now() time.Time {
	if r.Clock == nil {
		return time.Now()
	}
	return r.Clock.Now()
}

// SetupWithManager registers the controller. Controllers are leader-only
// runnables: a standby starts none of them.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	byHostedControlPlane := handler.EnqueueRequestsFromMapFunc(r.hostedControlPlane)
	return ctrl.NewControllerManagedBy(mgr).
		Named("hostedcontrolplane").
		For(&hyperv1.HostedControlPlane{}, builder.WithPredicates(r.isOwnHostedControlPlane())).
		Watches(&appsv1.Deployment{}, byHostedControlPlane, builder.WithPredicates(isComponent)).
		Watches(&corev1.Service{}, byHostedControlPlane, builder.WithPredicates(isComponent)).
		Complete(r)
}
