package hostedcontrolplane

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

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

// reconcileServices applies every component's Services and reads their
// ClusterIPs, which the certificates and the workloads need, and the
// endpoint the kube-apiserver is published at, from what the API server
// answered (or, when nothing was sent, from the live object): a Service
// just created has its address at once, not when the cache sees it.
func (r *Reconciler) reconcileServices(ctx context.Context, s *scope) (ctrl.Result, error) {
	apply := r.applier()
	s.clusterIPs = map[string]string{}
	live := map[string]*corev1.Service{}
	waiting := false
	for _, c := range s.components {
		for _, svc := range c.Services(s.hcp) {
			got := &corev1.Service{}
			if _, err := apply.ApplyInto(ctx, svc, got); s.refused(err) {
				continue
			} else if err != nil {
				return ctrl.Result{}, err
			}
			waiting = waiting || got.Spec.ClusterIP == ""
			s.clusterIPs[svc.Name] = got.Spec.ClusterIP
			live[svc.Name] = got
		}
	}
	if s.refusal != "" {
		return ctrl.Result{}, nil
	}
	if waiting {
		return ctrl.Result{RequeueAfter: addressPoll}, nil
	}
	s.servicesDone = true
	s.endpoint, s.endpointWhy = kubeapiserver.Endpoint(s.hcp, live[kubeapiserver.Name])
	return ctrl.Result{}, nil
}

// reconcileReadiness asks the kube-apiserver at its published endpoint,
// with the root CA, whether it is ready, once every component is available.
func (r *Reconciler) reconcileReadiness(ctx context.Context, s *scope) (ctrl.Result, error) {
	available, _ := s.available()
	ca := s.secrets[pki.RootCASecret]
	if !available || s.endpoint == nil || ca == nil {
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
