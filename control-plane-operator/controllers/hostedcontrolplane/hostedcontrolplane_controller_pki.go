package hostedcontrolplane

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/control-plane-operator/component"
	"github.com/hypershift-le/hypershift/control-plane-operator/components/etcd"
	"github.com/hypershift-le/hypershift/control-plane-operator/components/kubeapiserver"
	"github.com/hypershift-le/hypershift/control-plane-operator/pki"
)

// reconcilePKI keeps the PKI's Secrets: it plans them from what exists,
// and applies them, which sends nothing for a Secret that is still right.
// Before it writes anything, it reads the Secrets it would write past the
// cache, so a cache that lags never makes it re-issue what was just
// issued, nor issue a CA over one that exists. A CA Secret that holds no
// usable CA stops the pass: it is never replaced.
func (r *Reconciler) reconcilePKI(ctx context.Context, s *scope) (ctrl.Result, error) {
	in, err := pkiInputs(s)
	if err != nil {
		// The Services get their addresses soon.
		return ctrl.Result{RequeueAfter: addressPoll}, nil
	}
	live, err := r.liveSecrets(ctx, s.hcp.Namespace, r.Client, pki.SecretNames(in))
	if err != nil {
		return ctrl.Result{}, err
	}
	plan, err := pki.Plan(in, live, r.now())
	if err == nil && len(plan.Writes) > 0 {
		names := make([]string, 0, len(plan.Writes))
		for _, w := range plan.Writes {
			names = append(names, w.Secret)
		}
		if live, err = r.confirm(ctx, s.hcp.Namespace, live, names); err != nil {
			return ctrl.Result{}, err
		}
		plan, err = pki.Plan(in, live, r.now())
	}
	var caErr *pki.CAError
	var keyErr *pki.KeyError
	switch {
	case errors.As(err, &caErr), errors.As(err, &keyErr):
		s.pkiErr = err
		return ctrl.Result{}, reconcile.TerminalError(err)
	case err != nil:
		s.pkiErr = err
		return ctrl.Result{}, err
	}
	s.secrets = map[string]*corev1.Secret{}
	// Compared with the Secrets the plan was made from, not with a cache
	// that may have moved on since: a Secret deleted after it was planned
	// as kept is not applied, which would bring it back as it was; the
	// next pass plans without it.
	apply := r.applier()
	apply.Reader = snapshot(live)
	for _, secret := range plan.Secrets {
		if _, err := apply.Apply(ctx, secret); err != nil {
			return ctrl.Result{}, err
		}
		s.secrets[secret.Name] = secret
	}
	for _, w := range plan.Writes {
		r.recordWrite(s.hcp, s.secrets[w.Secret], w)
	}
	s.renewAt = plan.RenewAt
	s.encryptionActiveKey = plan.EncryptionActiveKey
	return ctrl.Result{}, nil
}

// liveSecrets reads the named Secrets through reader; a missing one is
// left out.
func (r *Reconciler) liveSecrets(ctx context.Context, namespace string, reader client.Reader, names []string) (map[string]*corev1.Secret, error) {
	live := map[string]*corev1.Secret{}
	for _, name := range names {
		secret := &corev1.Secret{}
		switch err := reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, secret); {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, fmt.Errorf("failed to get Secret %s: %w", name, err)
		default:
			live[name] = secret
		}
	}
	return live, nil
}

// confirm reads the named Secrets, and every CA Secret the cache does not
// show, past the cache.
func (r *Reconciler) confirm(ctx context.Context, namespace string, cached map[string]*corev1.Secret, names []string) (map[string]*corev1.Secret, error) {
	for _, ca := range pki.CASecrets {
		if cached[ca] == nil && !slices.Contains(names, ca) {
			names = append(names, ca)
		}
	}
	fresh, err := r.liveSecrets(ctx, namespace, r.APIReader, names)
	if err != nil {
		return nil, err
	}
	live := map[string]*corev1.Secret{}
	for name, secret := range cached {
		live[name] = secret
	}
	for _, name := range names {
		live[name] = fresh[name]
	}
	return live, nil
}

// eventReasons are the event reasons of PKI writes, one per cause, so
// that the events of one Secret are not folded into one series.
var eventReasons = map[pki.Cause]string{
	pki.Missing: "SecretIssued",
	pki.Due:     "CertificateRenewed",
	pki.Changed: "SecretUpdated",
	pki.Damaged: "SecretReissued",
}

// recordWrite makes a PKI write visible as an event on the
// HostedControlPlane, related to the Secret: a warning when the Secret was
// found damaged.
func (r *Reconciler) recordWrite(hcp *hyperv1.HostedControlPlane, secret *corev1.Secret, w pki.Write) {
	if r.Recorder == nil {
		return
	}
	eventType := corev1.EventTypeNormal
	if w.Cause == pki.Damaged {
		eventType = corev1.EventTypeWarning
	}
	r.Recorder.Eventf(hcp, secret, eventType, eventReasons[w.Cause], "Issue", "Wrote Secret %s: %s", w.Secret, w.Reason)
}

// pkiInputs derives what the certificates must say from the components'
// Services and the published endpoint.
func pkiInputs(s *scope) (pki.Inputs, error) {
	in := component.Inputs{HostedControlPlane: s.hcp, ClusterIPs: s.clusterIPs}
	internalURL, err := kubeapiserver.InternalURL(in)
	if err != nil {
		return pki.Inputs{}, err
	}
	hcp := s.hcp
	out := pki.Inputs{
		Namespace:     hcp.Namespace,
		Labels:        map[string]string{component.ComponentLabel: PKIComponent},
		Annotations:   component.ObjectMeta(hcp, PKIComponent, "").Annotations,
		ClusterName:   hcp.Namespace,
		EtcdServer:    etcd.ServerNames(hcp, s.clusterIPs),
		EtcdPeer:      etcd.PeerNames(hcp, s.clusterIPs),
		KubeAPIServer: kubeapiserver.ServingNames(hcp, s.clusterIPs, s.endpoint),
		InternalURL:   internalURL,
	}
	if s.endpoint != nil {
		out.ExternalURL = kubeapiserver.URL(s.endpoint)
	}
	if hcp.Spec.Platform.Type == hyperv1.PodPlatform {
		out.ClusterAPICluster = hcp.Name
	}
	out.EncryptionKeys = hyperv1.EncryptionKeySecrets(hcp.Spec.SecretEncryption)
	if hcp.Spec.Etcd.RestoreFrom != nil {
		out.RestoredKeys = hyperv1.EtcdRestoreEncryptionConfigSecret
	}
	if st := hcp.Status.SecretEncryption; st != nil {
		out.StoredWith = st.RewrittenWith
	}
	return out, nil
}

// snapshot reads Secrets from a map, as they were read before: what a
// plan was made from.
type snapshot map[string]*corev1.Secret

// Get implements client.Reader for Secrets.
func (s snapshot) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	secret, ok := obj.(*corev1.Secret)
	found := s[key.Name]
	if !ok {
		return fmt.Errorf("a PKI snapshot holds only Secrets, not %T", obj)
	}
	if found == nil || found.Namespace != key.Namespace {
		return apierrors.NewNotFound(corev1.Resource("secrets"), key.Name)
	}
	found.DeepCopyInto(secret)
	return nil
}

// List implements client.Reader; a snapshot cannot list.
func (s snapshot) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("a PKI snapshot cannot list")
}
