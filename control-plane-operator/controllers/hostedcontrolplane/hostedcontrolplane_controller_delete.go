package hostedcontrolplane

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/control-plane-operator/component"
	"github.com/hypershift-le/hypershift/support/controlplanekinds"
)

// componentSelector selects every object the CPO renders.
var componentSelector = func() labels.Selector {
	req, err := labels.NewRequirement(component.ComponentLabel, selection.Exists, nil)
	if err != nil {
		panic(err)
	}
	return labels.NewSelector().Add(*req)
}()

// reconcileDelete removes the component objects of every kind
// controlplanekinds.All marks Deleted (the workloads, their
// PodDisruptionBudgets, the Services), waits until they are gone, and then
// lets the HostedControlPlane go. What holds data stays for the namespace
// to take: the etcd claims, and the PKI's Secrets with the CAs.
func (r *Reconciler) reconcileDelete(ctx context.Context, hcp *hyperv1.HostedControlPlane) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(hcp, Finalizer) {
		return ctrl.Result{}, nil
	}
	remaining := 0
	for _, kind := range controlplanekinds.All {
		if !kind.Deleted {
			continue
		}
		n, err := r.deleteAll(ctx, hcp.Namespace, kind.NewList())
		if err != nil {
			return ctrl.Result{}, err
		}
		remaining += n
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

// deleteAll deletes the component objects of list's kind and returns how
// many were still there.
func (r *Reconciler) deleteAll(ctx context.Context, namespace string, list client.ObjectList) (int, error) {
	if err := r.Client.List(ctx, list, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: componentSelector}); err != nil {
		return 0, fmt.Errorf("failed to list %T: %w", list, err)
	}
	objects, err := meta.ExtractList(list)
	if err != nil {
		return 0, fmt.Errorf("failed to read %T: %w", list, err)
	}
	for _, obj := range objects {
		o := obj.(client.Object)
		if err := r.Client.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
			return 0, fmt.Errorf("failed to delete %T %s: %w", o, o.GetName(), err)
		}
	}
	return len(objects), nil
}
