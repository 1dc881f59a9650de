package hostedcontrolplane

import (
	"context"
	"os"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
)

// isFenced tells a write the API server refused because this pod does not
// hold the Lease (the policy the hypershift-operator binds).
func isFenced(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), hyperv1.FencingDenialPrefix)
}

// reportFenced counts a fenced reconcile and logs it once, with the holder
// this pod sees: a deposed leader learns here that it lost.
func (r *Reconciler) reportFenced(ctx context.Context, namespace string, err error) {
	fencedWrites.Inc()
	holder := "<unknown>"
	lease := &coordinationv1.Lease{}
	if getErr := r.APIReader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: hyperv1.ControlPlaneOperatorLeaseName}, lease); getErr == nil && lease.Spec.HolderIdentity != nil {
		holder = *lease.Spec.HolderIdentity
	}
	ctrl.LoggerFrom(ctx).Info("Write refused by the API server: this pod does not hold the Lease",
		"pod", os.Getenv("POD_NAME"), "holder", holder, "error", err.Error())
}
