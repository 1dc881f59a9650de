// Package render computes, as pure functions of a HostedCluster and its
// resolved inputs, every object the hypershift-operator creates for it: the
// control-plane namespace, the pull secret copy, the HostedControlPlane, and
// the control-plane-operator's ServiceAccount, Role, RoleBinding,
// auth-delegator ClusterRoleBinding and Deployment, with monitoring on
// its metrics Service and ServiceMonitor, and with management networks
// the NetworkPolicies that keep the tenant's side off the management
// cluster. Controllers apply what these functions return; tests compare
// it with golden files.
package render

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/config"
)

// Inputs is everything the objects of one HostedCluster depend on.
type Inputs struct {
	// HostedCluster is the cluster being rendered.
	HostedCluster *hyperv1.HostedCluster
	// ReleaseImage is the resolved release payload pull spec: the payload
	// the HO read, pinned by digest (<repository>@sha256:<digest>), so that
	// the HostedControlPlane and the CPO read exactly what the HO validated.
	ReleaseImage string
	// ControlPlaneOperatorImage is the image the CPO runs.
	ControlPlaneOperatorImage string
	// ControlPlaneOperatorTimings are the CPO's leader-election timings,
	// valid (the HO validates its flags once, at start).
	ControlPlaneOperatorTimings config.Timings
	// InsecureRegistries are the registry hosts the HO reaches over plain
	// HTTP: the CPO reads the same payloads from them.
	InsecureRegistries []string
	// ClusterAPIImage is the image of the cluster-api manager of a
	// HostedCluster of platform Pod.
	ClusterAPIImage string
	// ClusterAPITimings are the cluster-api manager's leader-election
	// timings, valid.
	ClusterAPITimings config.Timings
	// MachineImage and SandboxImage are the release payload's machine
	// image and pause image (platform Pod): MachineImageCache keeps the
	// machine image on every management node. "" when the payload names
	// none; the cache is then not rendered.
	MachineImage, SandboxImage string
	// EncryptionKeys are the AES keys of the key Secrets the HostedCluster's
	// spec.secretEncryption names, by Secret name: SecretEncryptionKeys
	// copies them into the control-plane namespace.
	EncryptionKeys map[string][]byte
	// EtcdRestore is, for a HostedCluster created from an EtcdBackup
	// whose etcd is not restored yet, what its members restore with:
	// EtcdRestoreSecrets copies it into the control-plane namespace. Nil
	// otherwise.
	EtcdRestore *EtcdRestore
	// Fenced says the HO fences this control plane: its namespace carries
	// LeaderFencingLabel, which the fencing bindings select.
	Fenced bool
	// OperatorShard is, when the HO runs more than one shard and fences,
	// the shard of this HostedCluster as OperatorShardLabel's value
	// ("<i>-of-<count>"), which its shard's fencing binding selects; ""
	// otherwise.
	OperatorShard string
}

// EtcdRestore is what a restoring cluster's control-plane namespace is
// given: the transfer (certificate, token and the snapshot's URL) the
// members' init containers download the snapshot with, and the backup's
// EncryptionConfiguration, whose keys read the restored Secrets.
type EtcdRestore struct {
	Transfer         map[string][]byte
	EncryptionConfig []byte
}

// Validate refuses inputs the renderers must not turn into objects.
func (in Inputs) Validate() error {
	if in.HostedCluster == nil {
		return fmt.Errorf("no HostedCluster to render")
	}
	if in.ReleaseImage == "" {
		return fmt.Errorf("no release image to render")
	}
	if in.ControlPlaneOperatorImage == "" {
		return fmt.Errorf("no control-plane-operator image: the release payload has no hypershift image, and neither the %s annotation nor --control-plane-operator-image names one", hyperv1.ControlPlaneOperatorImageAnnotation)
	}
	if in.HostedCluster.Spec.Platform.Type == hyperv1.PodPlatform && in.ClusterAPIImage == "" {
		return fmt.Errorf("no cluster-api manager image, which platform Pod runs its machines with: the release payload has no cluster-api image, and the %s annotation names none", hyperv1.ClusterAPIManagerImageAnnotation)
	}
	if level, ok := in.HostedCluster.Annotations[hyperv1.ControlPlaneOperatorLogLevelAnnotation]; ok && !config.ValidLogLevel(level) {
		return fmt.Errorf("annotation %s is %q: want debug, info, error or a verbosity from 1 up", hyperv1.ControlPlaneOperatorLogLevelAnnotation, level)
	}
	return nil
}

// Namespace returns the name of the control-plane namespace.
func (in Inputs) Namespace() string {
	return hyperv1.ControlPlaneNamespace(in.HostedCluster.Namespace, in.HostedCluster.Name)
}

// objectMeta is the metadata every object in the control-plane namespace
// carries: the link back to its HostedCluster.
func (in Inputs) objectMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Namespace:   in.Namespace(),
		Name:        name,
		Annotations: map[string]string{hyperv1.ClusterAnnotation: ClusterKey(in.HostedCluster)},
	}
}

// ClusterKey is the value of the cluster annotation for hc: <namespace>/<name>.
func ClusterKey(hc *hyperv1.HostedCluster) string {
	return hc.Namespace + "/" + hc.Name
}

// ClusterOf reads the cluster annotation of obj: the HostedCluster it was
// created for, and false when it names none.
func ClusterOf(obj metav1.Object) (types.NamespacedName, bool) {
	namespace, name, ok := strings.Cut(obj.GetAnnotations()[hyperv1.ClusterAnnotation], "/")
	if !ok || namespace == "" || name == "" {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: namespace, Name: name}, true
}
