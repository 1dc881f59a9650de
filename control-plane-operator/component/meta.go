package component

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
)

const (
	// AppLabel selects a component's pods. It is the whole selector of the
	// component's workload, so it must never change: a selector is
	// immutable once created.
	AppLabel = "app"
	// ComponentLabel marks every object the control-plane-operator renders
	// with the component it belongs to ("pki" for the PKI's Secrets).
	ComponentLabel = hyperv1.ControlPlaneComponentLabel
	// SecretsHashAnnotation on a pod template is a digest of the Secrets
	// its processes read, so that a re-issued certificate rolls them.
	SecretsHashAnnotation = "hypershift.openshift.io/secrets-hash"
	// ConfigHashAnnotation on a pod template is a digest of the
	// ConfigMaps its processes read at start, so that a change of their
	// configuration rolls them.
	ConfigHashAnnotation = "hypershift.openshift.io/config-hash"
)

// Labels are the labels of a component's objects and pods.
func Labels(name string) map[string]string {
	return map[string]string{AppLabel: name, ComponentLabel: name}
}

// Selector selects a component's pods.
func Selector(name string) map[string]string {
	return map[string]string{AppLabel: name}
}

// ObjectMeta is the metadata of a component's object called name: in the
// control plane's namespace, labelled with the component, and linked back
// to the HostedCluster when the HostedControlPlane is.
func ObjectMeta(hcp *hyperv1.HostedControlPlane, component, name string) metav1.ObjectMeta {
	meta := metav1.ObjectMeta{Namespace: hcp.Namespace, Name: name, Labels: Labels(component)}
	if cluster, ok := hcp.Annotations[hyperv1.ClusterAnnotation]; ok {
		meta.Annotations = map[string]string{hyperv1.ClusterAnnotation: cluster}
	}
	return meta
}

// PodTemplateMeta labels a component's pods and carries the digest of the
// Secrets they read.
func (in Inputs) PodTemplateMeta(component string, secrets ...string) metav1.ObjectMeta {
	h := sha256.New()
	for _, name := range secrets {
		h.Write([]byte(name + "=" + in.SecretHashes[name] + "\n"))
	}
	return metav1.ObjectMeta{
		Labels:      Labels(component),
		Annotations: map[string]string{SecretsHashAnnotation: hex.EncodeToString(h.Sum(nil))[:32]},
	}
}

// SetConfigHash annotates a pod template with the digest of the
// ConfigMaps its pods read: their names, keys and values.
func SetConfigHash(template *metav1.ObjectMeta, configMaps ...*corev1.ConfigMap) {
	h := sha256.New()
	for _, cm := range configMaps {
		h.Write([]byte(cm.Name + "\n"))
		for _, key := range slices.Sorted(maps.Keys(cm.Data)) {
			h.Write([]byte(key + "=" + cm.Data[key] + "\n"))
		}
		h.Write([]byte("\x00"))
	}
	if template.Annotations == nil {
		template.Annotations = map[string]string{}
	}
	template.Annotations[ConfigHashAnnotation] = hex.EncodeToString(h.Sum(nil))[:32]
}

// Replicas is a component's replica count: one under SingleReplica (or an
// unset policy), highlyAvailable under HighlyAvailable.
func Replicas(policy hyperv1.AvailabilityPolicy, highlyAvailable int32) int32 {
	if policy == hyperv1.HighlyAvailable {
		return highlyAvailable
	}
	return 1
}
