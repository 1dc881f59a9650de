package hostedcontrolplane

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/control-plane-operator/component"
	"github.com/hypershift-le/hypershift/control-plane-operator/pki"
	"github.com/hypershift-le/hypershift/support/apply"
)

// reconcileComponents renders every component's workload, then applies
// each in dependency order once the components it depends on have rolled
// out, and judges each one's availability. A new release therefore rolls
// out one layer at a time: etcd, then the kube-apiserver, then the
// controllers that work through it. A control plane that never came up
// starts the kube-apiserver with etcd (see firstStart).
func (r *Reconciler) reconcileComponents(ctx context.Context, s *scope) (ctrl.Result, error) {
	in := component.Inputs{HostedControlPlane: s.hcp, Release: s.release, ClusterIPs: s.clusterIPs, SecretHashes: map[string]string{}}
	for name, secret := range s.secrets {
		in.SecretHashes[name] = pki.Hash(secret)
	}
	workloads := make([]*component.Workload, len(s.components))
	for i, c := range s.components {
		w, err := c.Workload(in)
		var missingImage *component.MissingImageError
		var missingAddress *component.MissingAddressError
		switch {
		case errors.As(err, &missingImage):
			s.releaseErr = err
			return ctrl.Result{}, reconcile.TerminalError(err)
		case errors.As(err, &missingAddress):
			return ctrl.Result{RequeueAfter: addressPoll}, nil
		case err != nil:
			s.configErr = err
			return ctrl.Result{}, reconcile.TerminalError(err)
		}
		workloads[i] = w
	}
	s.rendered = true
	s.availability = map[string]component.Availability{}
	s.rolledOut = map[string]bool{}
	s.written = map[string]bool{}
	for i, c := range s.components {
		if err := r.applyWorkload(ctx, s, c, workloads[i]); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, nil
}

// applyWorkload judges one component from its live workload and, unless a
// component it depends on has not rolled out yet, applies its workload. It
// has rolled out when the apply changed nothing and the live workload is
// available: every replica runs the desired spec.
func (r *Reconciler) applyWorkload(ctx context.Context, s *scope, c component.Component, w *component.Workload) error {
	live := w.Object.DeepCopyObject().(client.Object)
	switch err := r.Client.Get(ctx, client.ObjectKeyFromObject(w.Object), live); {
	case apierrors.IsNotFound(err):
		live = nil
	case err != nil:
		return fmt.Errorf("failed to get the workload of %s: %w", c.Name(), err)
	}
	availability := component.Available(live)
	if !availability.Available {
		unbound, err := r.unboundClaims(ctx, live)
		if err != nil {
			return err
		}
		if len(unbound) > 0 {
			availability = component.ClaimsUnbound(unbound)
		}
	}
	s.availability[c.Name()] = availability
	if waiting := s.notRolledOut(c.DependsOn()); len(waiting) > 0 && !s.firstStart(c, live) {
		if !availability.Available {
			s.availability[c.Name()] = component.Availability{Reason: hyperv1.WaitingForDependenciesReason, Message: "Waiting for " + strings.Join(waiting, ", ") + " to roll out"}
		}
		return nil
	}
	applier := r.applier()
	changed := false
	for _, obj := range append(slices.Clone(w.Extras), w.Object) {
		sent, err := applier.Apply(ctx, obj)
		if s.refused(err) {
			// What runs keeps running; what does not says why.
			if !availability.Available {
				s.availability[c.Name()] = component.Availability{Reason: hyperv1.RefusedByAPIServerReason, Message: apply.Refusal(err)}
			}
			return nil
		}
		if err != nil {
			return err
		}
		changed = changed || sent
	}
	s.written[c.Name()] = true
	if changed {
		s.availability[c.Name()] = component.Availability{Reason: hyperv1.RollingOutReason, Message: "The workload was just changed"}
		return nil
	}
	s.rolledOut[c.Name()] = availability.Available
	return nil
}

// firstStart reports whether a component whose dependencies have not
// rolled out may be created anyway: it starts with its dependencies
// (component.EarlyStarter), its workload does not exist, the control plane
// never came up, and its dependencies' workloads were written in this
// pass. There is no older version to keep order with; the kube-apiserver's
// start-up then overlaps etcd's (about 5 s of a new cluster's first
// request). Once the control plane has come up (status.initialization),
// and for every workload that exists, the order holds: an upgrade rolls
// out one layer at a time.
func (s *scope) firstStart(c component.Component, live client.Object) bool {
	early, ok := c.(component.EarlyStarter)
	initialized := s.hcp.Status.Initialization != nil && ptr.Deref(s.hcp.Status.Initialization.ControlPlaneInitialized, false)
	if !ok || !early.StartsWithDependencies() || live != nil || initialized {
		return false
	}
	for _, name := range c.DependsOn() {
		if !s.written[name] {
			return false
		}
	}
	return true
}

// unboundClaims returns the claims of live's pods that exist and are not
// bound yet (a claim not created yet is not a problem of its own).
func (r *Reconciler) unboundClaims(ctx context.Context, live client.Object) ([]string, error) {
	var unbound []string
	for _, name := range component.Claims(live) {
		claim := &corev1.PersistentVolumeClaim{}
		switch err := r.Client.Get(ctx, client.ObjectKey{Namespace: live.GetNamespace(), Name: name}, claim); {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, fmt.Errorf("failed to get claim %s: %w", name, err)
		case claim.Status.Phase != corev1.ClaimBound:
			unbound = append(unbound, name)
		}
	}
	return unbound, nil
}

// notRolledOut returns which of names have not rolled out.
func (s *scope) notRolledOut(names []string) []string {
	var waiting []string
	for _, name := range names {
		if !s.rolledOut[name] {
			waiting = append(waiting, name)
		}
	}
	return waiting
}

// available reports whether every component serves (some may still run
// the previous release), and which do not.
func (s *scope) available() (bool, []string) {
	if s.availability == nil {
		return false, nil
	}
	var waiting []string
	for _, c := range s.components {
		if !s.availability[c.Name()].Available {
			waiting = append(waiting, c.Name())
		}
	}
	return len(waiting) == 0, waiting
}

// allRolledOut reports whether every component runs what this pass
// rendered, and is available.
func (s *scope) allRolledOut() bool {
	if s.rolledOut == nil {
		return false
	}
	names := make([]string, 0, len(s.components))
	for _, c := range s.components {
		names = append(names, c.Name())
	}
	return len(s.notRolledOut(names)) == 0
}
