package render

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
)

// HostedControlPlane is the control-plane-operator's input, copied from the
// HostedCluster with the release image resolved (spec.services among it:
// how the kube-apiserver is published). pausedUntil is left out: the
// HO writes it with a field owner of its own, so that pausing works while the
// rest of the spec is frozen.
func HostedControlPlane(in Inputs) *hyperv1.HostedControlPlane {
	hc := in.HostedCluster
	spec := hyperv1.HostedControlPlaneSpec{
		ReleaseImage:                 in.ReleaseImage,
		ControllerAvailabilityPolicy: hc.Spec.ControllerAvailabilityPolicy,
		Platform:                     hc.Spec.Platform,
		Networking:                   *hc.Spec.Networking.DeepCopy(),
		PullSecret:                   hyperv1.LocalObjectReference{Name: hyperv1.PullSecretName},
		InfraID:                      hc.Spec.InfraID,
		ClusterID:                    hc.Spec.ClusterID,
		Etcd:                         hc.Spec.Etcd,
		Configuration:                hc.Spec.Configuration.DeepCopy(),
	}
	if e := hc.Spec.SecretEncryption; e != nil {
		spec.SecretEncryption = e.DeepCopy()
		if a := spec.SecretEncryption.AESCBC; a != nil {
			a.ActiveKey.Name = hyperv1.SecretEncryptionKeyCopyName(a.ActiveKey.Name)
			if a.BackupKey != nil {
				a.BackupKey.Name = hyperv1.SecretEncryptionKeyCopyName(a.BackupKey.Name)
			}
		}
	}
	for _, service := range hc.Spec.Services {
		spec.Services = append(spec.Services, *service.DeepCopy())
	}
	meta := in.objectMeta(hc.Name)
	for key, value := range hc.Annotations {
		if hyperv1.CopiedToControlPlane(key) {
			meta.Annotations[key] = value
		}
	}
	return &hyperv1.HostedControlPlane{
		TypeMeta:   metav1.TypeMeta{APIVersion: hyperv1.GroupVersion.String(), Kind: "HostedControlPlane"},
		ObjectMeta: meta,
		Spec:       spec,
	}
}
