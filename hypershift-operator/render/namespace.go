package render

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
)

// Namespace is the control-plane namespace: labelled as one, and with Pod
// Security "restricted" enforced, audited and warned. On platform Pod it
// holds the machines, privileged Pods each (a node runs containers): Pod
// Security "privileged" is enforced there, and "restricted" still audited
// and warned, so that the audit log names every Pod beyond it. Labelled
// LeaderFencingLabel when the HO fences it (in.Fenced), and
// OperatorShardLabel when the HO's shards are fenced (in.OperatorShard).
func Namespace(in Inputs) *corev1.Namespace {
	meta := in.objectMeta(in.Namespace())
	meta.Namespace = ""
	enforce := "restricted"
	if in.HostedCluster.Spec.Platform.Type == hyperv1.PodPlatform {
		enforce = "privileged"
	}
	meta.Labels = map[string]string{
		hyperv1.HostedControlPlaneLabel:              "true",
		"pod-security.kubernetes.io/enforce":         enforce,
		"pod-security.kubernetes.io/enforce-version": "latest",
		"pod-security.kubernetes.io/audit":           "restricted",
		"pod-security.kubernetes.io/audit-version":   "latest",
		"pod-security.kubernetes.io/warn":            "restricted",
		"pod-security.kubernetes.io/warn-version":    "latest",
	}
	if in.Fenced {
		meta.Labels[LeaderFencingLabel] = "true"
	}
	if in.OperatorShard != "" {
		meta.Labels[hyperv1.OperatorShardLabel] = in.OperatorShard
	}
	return &corev1.Namespace{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: meta,
	}
}

// PullSecret is the copy of the HostedCluster's pull secret in the
// control-plane namespace, for the control-plane operator's pods.
func PullSecret(in Inputs, dockerConfigJSON []byte) *corev1.Secret {
	meta := in.objectMeta(hyperv1.PullSecretName)
	meta.Labels = map[string]string{hyperv1.SecretCopyLabel: hyperv1.SecretCopyPullSecret}
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: meta,
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: dockerConfigJSON},
	}
}

// SecretEncryptionKeys are the copies, in the control-plane namespace, of
// the key Secrets the HostedCluster's spec.secretEncryption names
// (hyperv1.SecretEncryptionKeyCopyName), the active one first: the
// control-plane-operator's PKI reads them (they carry its component label,
// so that its cache holds and watches them) into the kube-apiserver's
// encryption configuration.
func SecretEncryptionKeys(in Inputs) []*corev1.Secret {
	var copies []*corev1.Secret
	for _, name := range hyperv1.EncryptionKeySecrets(in.HostedCluster.Spec.SecretEncryption) {
		meta := in.objectMeta(hyperv1.SecretEncryptionKeyCopyName(name))
		meta.Labels = map[string]string{
			hyperv1.SecretCopyLabel:            hyperv1.SecretCopyEncryptionKey,
			hyperv1.ControlPlaneComponentLabel: "secret-encryption",
		}
		copies = append(copies, &corev1.Secret{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: meta,
			Type:       corev1.SecretTypeOpaque,
			Data:       map[string][]byte{hyperv1.AESCBCKeySecretKey: in.EncryptionKeys[name]},
		})
	}
	return copies
}

// AdminKubeconfig is the copy of the hosted cluster's admin kubeconfig
// (kubeconfig, what the control-plane-operator published) in the
// HostedCluster's namespace, named <name>-admin-kubeconfig, as
// status.kubeconfig says; labelled with its operator shard when the HO's
// shards are fenced (in.OperatorShard).
func AdminKubeconfig(in Inputs, kubeconfig []byte) *corev1.Secret {
	hc := in.HostedCluster
	secret := &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   hc.Namespace,
			Name:        hyperv1.AdminKubeconfigName(hc.Name),
			Labels:      map[string]string{hyperv1.SecretCopyLabel: hyperv1.SecretCopyAdminKubeconfig},
			Annotations: map[string]string{hyperv1.ClusterAnnotation: ClusterKey(hc)},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{hyperv1.KubeconfigKey: kubeconfig},
	}
	SetOperatorShard(secret, in.OperatorShard)
	return secret
}

// EtcdRestoreSecrets are the Secrets, in the control-plane namespace, of a
// cluster whose etcd restores from a backup (in.EtcdRestore): the
// transfer, which the members' init containers mount, and the backup's
// encryption configuration, which the control-plane-operator's PKI reads
// into the kube-apiserver's (both carry its component label, so that its
// cache holds them). None once restored: the transfer is then deleted, the
// configuration kept as it is.
func EtcdRestoreSecrets(in Inputs) []*corev1.Secret {
	if in.EtcdRestore == nil {
		return nil
	}
	secret := func(name string, data map[string][]byte) *corev1.Secret {
		meta := in.objectMeta(name)
		meta.Labels = map[string]string{
			hyperv1.SecretCopyLabel:            hyperv1.SecretCopyEtcdRestore,
			hyperv1.ControlPlaneComponentLabel: "etcd-restore",
		}
		return &corev1.Secret{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: meta,
			Type:       corev1.SecretTypeOpaque,
			Data:       data,
		}
	}
	return []*corev1.Secret{
		secret(hyperv1.EtcdRestoreEncryptionConfigSecret, map[string][]byte{"config.yaml": in.EtcdRestore.EncryptionConfig}),
		secret(hyperv1.EtcdRestoreTransferSecret, in.EtcdRestore.Transfer),
	}
}
