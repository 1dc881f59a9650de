package hostedcontrolplane

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/control-plane-operator/components/kubeapiserver"
	"github.com/hypershift-le/hypershift/control-plane-operator/pki"
	"github.com/hypershift-le/hypershift/control-plane-operator/secretencryption"
	"github.com/hypershift-le/hypershift/support/hostedclient"
)

// reconcileSecretEncryption rewrites every Secret of the hosted cluster
// with the active key, once per active key: after the kube-apiserver has
// rolled out with the encryption configuration the PKI phase kept (every
// replica runs it) and answers at its endpoint. Until then, and while it
// fails, SecretsEncrypted is False: a backup key must be kept.
func (r *Reconciler) reconcileSecretEncryption(ctx context.Context, s *scope) (ctrl.Result, error) {
	active := s.encryptionActiveKey
	if active == "" || !s.rolledOut[kubeapiserver.Name] || !s.readyzAsked || s.readyzErr != nil {
		return ctrl.Result{}, nil
	}
	if st := s.hcp.Status.SecretEncryption; st != nil && st.RewrittenWith == active {
		s.rewrittenWith = active
		return ctrl.Result{}, nil
	}
	kubeconfig := s.secrets[pki.HostedClusterConfigKubeconfigSecret]
	if kubeconfig == nil {
		return ctrl.Result{}, nil
	}
	hosted, err := r.hostedClient()(kubeconfig.Data[pki.KubeconfigKey])
	if err != nil {
		s.encryptionErr = err
		return ctrl.Result{}, err
	}
	result, err := secretencryption.Rewrite(ctx, hosted)
	if err != nil {
		s.encryptionErr = err
		return ctrl.Result{}, err
	}
	s.rewrittenWith = active
	ctrl.LoggerFrom(ctx).Info("Rewrote the hosted cluster's Secrets with the active encryption key",
		"key", active, "listed", result.Listed, "rewritten", result.Rewritten)
	if r.Recorder != nil {
		r.Recorder.Eventf(s.hcp, nil, corev1.EventTypeNormal, hyperv1.SecretsRewrittenReason, "Rewrite",
			"Rewrote %d of the hosted cluster's %d Secrets with encryption key %s", result.Rewritten, result.Listed, active)
	}
	return ctrl.Result{}, nil
}

// setSecretEncryptionStatus records the active key and SecretsEncrypted.
func (s *scope) setSecretEncryptionStatus(set func(string, bool, string, string)) {
	if s.encryptionActiveKey == "" {
		return
	}
	hcp := s.hcp
	st := hcp.Status.SecretEncryption
	if st == nil {
		st = &hyperv1.SecretEncryptionStatus{}
		hcp.Status.SecretEncryption = st
	}
	st.ActiveKey = s.encryptionActiveKey
	if s.rewrittenWith != "" {
		st.RewrittenWith = s.rewrittenWith
	}
	switch {
	case st.RewrittenWith == st.ActiveKey:
		set(hyperv1.SecretsEncrypted, true, hyperv1.SecretsRewrittenReason,
			fmt.Sprintf("Every Secret is stored encrypted with the active key %s (%s): other keys can be dropped", st.ActiveKey, activeKeySecret(hcp)))
	case s.encryptionErr != nil:
		set(hyperv1.SecretsEncrypted, false, hyperv1.RewritingSecretsReason,
			fmt.Sprintf("Rewriting the Secrets with the active key %s failed, keep the other keys: %v", st.ActiveKey, s.encryptionErr))
	default:
		set(hyperv1.SecretsEncrypted, false, hyperv1.RewritingSecretsReason,
			fmt.Sprintf("Secrets are rewritten with the active key %s (%s) once the kube-apiserver runs it: keep the other keys until then", st.ActiveKey, activeKeySecret(hcp)))
	}
}

// activeKeySecret names the Secret of the active key.
func activeKeySecret(hcp *hyperv1.HostedControlPlane) string {
	if keys := hyperv1.EncryptionKeySecrets(hcp.Spec.SecretEncryption); len(keys) > 0 {
		return "Secret " + keys[0]
	}
	return "Secret " + pki.EncryptionKeySecret + ", generated"
}

// hostedClient makes a client of the hosted cluster from a kubeconfig.
func (r *Reconciler) hostedClient() func([]byte) (client.Client, error) {
	if r.HostedClient != nil {
		return r.HostedClient
	}
	return func(kubeconfig []byte) (client.Client, error) {
		return hostedclient.New(kubeconfig, hostedRequestTimeout, pki.HostedClusterConfigKubeconfigSecret)
	}
}
