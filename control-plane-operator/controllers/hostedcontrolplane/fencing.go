package hostedcontrolplane

import (
	"context"
	"fmt"
	"strings"
	"sync"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/conditions"
)

// WritesFenced is the HostedControlPlane condition that tells whether the API
// server refused writes of this control-plane-operator as not the Lease
// holder (see FencedWrites).
const WritesFenced = hyperv1.WritesFenced

// isFenced tells a write the API server refused because this pod does not
// hold the Lease (the policy the hypershift-operator binds).
func isFenced(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), hyperv1.FencingDenialPrefix)
}

// reportFenced logs a fenced reconcile once, with the holder this pod sees:
// a deposed leader learns here that it lost.
func (r *Reconciler) reportFenced(ctx context.Context, namespace string, err error) {
	holder := "<unknown>"
	lease := &coordinationv1.Lease{}
	if getErr := r.APIReader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: hyperv1.ControlPlaneOperatorLeaseName}, lease); getErr == nil && lease.Spec.HolderIdentity != nil {
		holder = *lease.Spec.HolderIdentity
	}
	ctrl.LoggerFrom(ctx).Info("Write refused by the API server: this pod does not hold the Lease",
		"pod", r.Identity, "holder", holder, "error", err.Error())
}

// FencedWrites counts every write of this process that the API server
// refused as fenced, status updates and finalizer patches included: in the
// control_plane_operator_fenced_writes_total metric at once, and in the
// HostedControlPlane's WritesFenced condition as soon as a status write is
// admitted again (a holder fenced by a stale API server cache, for one).
type FencedWrites struct {
	mu    sync.Mutex
	count int
	last  string
}

// note counts err when it is a fenced refusal, and returns it.
func (f *FencedWrites) note(err error) error {
	if f == nil || err == nil || !isFenced(err) {
		return err
	}
	fencedWrites.Inc()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.count++
	f.last = err.Error()
	return err
}

// setCondition reports the refusals so far on the HostedControlPlane.
func (f *FencedWrites) setCondition(hcp *hyperv1.HostedControlPlane) {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.count == 0 {
		conditions.Set(&hcp.Status.Conditions, hcp.Generation, WritesFenced, metav1.ConditionFalse, hyperv1.AsExpectedReason,
			"The API server refused no write of this control-plane-operator as not the Lease holder")
		return
	}
	conditions.Set(&hcp.Status.Conditions, hcp.Generation, WritesFenced, metav1.ConditionTrue, hyperv1.WritesRefusedReason,
		fmt.Sprintf("The API server refused %d writes of this control-plane-operator as not the Lease holder; the last: %s", f.count, f.last))
}

// Client returns c with every write counted.
func (f *FencedWrites) Client(c client.Client) client.Client { return countingClient{Client: c, f: f} }

// countingClient counts the fenced refusals of every write it sends.
type countingClient struct {
	client.Client
	f *FencedWrites
}

func (c countingClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	return c.f.note(c.Client.Create(ctx, obj, opts...))
}

func (c countingClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	return c.f.note(c.Client.Update(ctx, obj, opts...))
}

func (c countingClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	return c.f.note(c.Client.Patch(ctx, obj, patch, opts...))
}

func (c countingClient) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	return c.f.note(c.Client.Apply(ctx, obj, opts...))
}

func (c countingClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	return c.f.note(c.Client.Delete(ctx, obj, opts...))
}

func (c countingClient) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	return c.f.note(c.Client.DeleteAllOf(ctx, obj, opts...))
}

func (c countingClient) Status() client.SubResourceWriter {
	return countingStatus{SubResourceWriter: c.Client.Status(), f: c.f}
}

// countingStatus counts the fenced refusals of status writes.
type countingStatus struct {
	client.SubResourceWriter
	f *FencedWrites
}

func (c countingStatus) Create(ctx context.Context, obj client.Object, sub client.Object, opts ...client.SubResourceCreateOption) error {
	return c.f.note(c.SubResourceWriter.Create(ctx, obj, sub, opts...))
}

func (c countingStatus) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	return c.f.note(c.SubResourceWriter.Update(ctx, obj, opts...))
}

func (c countingStatus) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	return c.f.note(c.SubResourceWriter.Patch(ctx, obj, patch, opts...))
}

func (c countingStatus) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	return c.f.note(c.SubResourceWriter.Apply(ctx, obj, opts...))
}
