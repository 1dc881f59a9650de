package hostedcontrolplane

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/hypershift-le/hypershift/control-plane-operator/component"
	"github.com/hypershift-le/hypershift/control-plane-operator/components/kubeapiserver"
	"github.com/hypershift-le/hypershift/control-plane-operator/pki"
)

// reconcileRelease reads the payload with the pull secret the HO copied
// next to the CPO.
func (r *Reconciler) reconcileRelease(ctx context.Context, s *scope) (ctrl.Result, error) {
	hcp := s.hcp
	secret := &corev1.Secret{}
	key := client.ObjectKey{Namespace: hcp.Namespace, Name: hcp.Spec.PullSecret.Name}
	if err := r.APIReader.Get(ctx, key, secret); err != nil {
		s.releaseErr = fmt.Errorf("failed to get pull secret %s: %w", key, err)
		return ctrl.Result{}, s.releaseErr
	}
	release, err := r.Releases.Lookup(ctx, hcp.Spec.ReleaseImage, secret.Data[corev1.DockerConfigJsonKey])
	if err != nil {
		s.releaseErr = fmt.Errorf("failed to read release image %s: %w", hcp.Spec.ReleaseImage, err)
		return ctrl.Result{}, s.releaseErr
	}
	s.release = release
	return ctrl.Result{}, nil
}

// reconcileServices applies every component's Services and reads back
// their ClusterIPs, which the certificates and the workloads need, and the
// endpoint the kube-apiserver is published at.
func (r *Reconciler) reconcileServices(ctx context.Context, s *scope) (ctrl.Result, error) {
	apply := r.applier()
	s.clusterIPs = map[string]string{}
	live := map[string]*corev1.Service{}
	waiting := false
	for _, c := range s.components {
		for _, svc := range c.Services(s.hcp) {
			if _, err := apply.Apply(ctx, svc); err != nil {
				return ctrl.Result{}, err
			}
			got := &corev1.Service{}
			switch err := r.Client.Get(ctx, client.ObjectKeyFromObject(svc), got); {
			case apierrors.IsNotFound(err):
				waiting = true // the cache has not seen it yet
				continue
			case err != nil:
				return ctrl.Result{}, fmt.Errorf("failed to get Service %s: %w", svc.Name, err)
			}
			waiting = waiting || got.Spec.ClusterIP == ""
			s.clusterIPs[svc.Name] = got.Spec.ClusterIP
			live[svc.Name] = got
		}
	}
	if waiting {
		return ctrl.Result{RequeueAfter: addressPoll}, nil
	}
	s.servicesDone = true
	s.endpoint, s.endpointWhy = kubeapiserver.Endpoint(s.hcp, live[kubeapiserver.Name])
	return ctrl.Result{}, nil
}

// reconcileComponents renders every component's workload, then applies
// each in dependency order once the components it depends on are
// available, and judges each one's availability.
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
	for i, c := range s.components {
		availability, err := r.applyWorkload(ctx, s, c, workloads[i])
		if err != nil {
			return ctrl.Result{}, err
		}
		s.availability[c.Name()] = availability
	}
	return ctrl.Result{}, nil
}

// applyWorkload applies one component's workload unless a component it
// depends on is unavailable, and judges it.
func (r *Reconciler) applyWorkload(ctx context.Context, s *scope, c component.Component, w *component.Workload) (component.Availability, error) {
	live := w.Object.DeepCopyObject().(client.Object)
	switch err := r.Client.Get(ctx, client.ObjectKeyFromObject(w.Object), live); {
	case apierrors.IsNotFound(err):
		live = nil
	case err != nil:
		return component.Availability{}, fmt.Errorf("failed to get the workload of %s: %w", c.Name(), err)
	}
	availability := component.Available(live)
	var waitingFor []string
	for _, dep := range c.DependsOn() {
		if !s.availability[dep].Available {
			waitingFor = append(waitingFor, dep)
		}
	}
	if len(waitingFor) > 0 {
		if !availability.Available {
			availability = component.Availability{Reason: "WaitingForDependencies", Message: "Waiting for " + strings.Join(waitingFor, ", ") + " to be available"}
		}
		return availability, nil
	}
	apply := r.applier()
	changed := false
	for _, obj := range append([]client.Object{w.Object}, w.Extras...) {
		sent, err := apply.Apply(ctx, obj)
		if err != nil {
			return component.Availability{}, err
		}
		changed = changed || sent
	}
	if changed {
		availability = component.Availability{Reason: "RollingOut", Message: "The workload was just changed"}
	}
	return availability, nil
}

// reconcileReadiness asks the kube-apiserver at its published endpoint,
// with the root CA, whether it is ready, once every component is available.
func (r *Reconciler) reconcileReadiness(ctx context.Context, s *scope) (ctrl.Result, error) {
	ready, _ := s.ready()
	ca := s.secrets[pki.RootCASecret]
	if !ready || s.endpoint == nil || ca == nil {
		return ctrl.Result{}, nil
	}
	url := kubeapiserver.URL(s.endpoint)
	s.readyzAsked = true
	s.readyzErr = r.ready()(ctx, url, ca.Data[pki.CACertKey])
	if s.readyzErr != nil {
		ctrl.LoggerFrom(ctx).Info("The kube-apiserver is not ready at its endpoint", "url", url, "error", s.readyzErr.Error())
	}
	return ctrl.Result{}, nil
}

// ready reports whether every component is available, and which are not.
func (s *scope) ready() (bool, []string) {
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
