package v1beta1

import (
	"fmt"
	"strings"
)

// Names shared by the operators, the CLI and anything that watches them. They
// are contracts: changing one strands objects that already exist.
const (
	// Finalizer holds a HostedCluster (and its HostedControlPlane) until its
	// control plane has been torn down.
	Finalizer = "hypershift.openshift.io/finalizer"

	// ClusterAnnotation links an object the hypershift-operator created in a
	// control-plane namespace back to its HostedCluster, as <namespace>/<name>.
	ClusterAnnotation = "hypershift.openshift.io/cluster"

	// ControlPlaneOperatorImageAnnotation on a HostedCluster overrides the
	// control-plane-operator image the release payload names.
	ControlPlaneOperatorImageAnnotation = "hypershift.openshift.io/control-plane-operator-image"

	// ControlPlaneOperatorLogLevelAnnotation on a HostedCluster sets the
	// control-plane-operator's --zap-log-level: debug, info, error, or a
	// verbosity from 1 up (1 is info, higher is more detailed). The HO
	// renders the CPO's Deployment, so this is the way to change it.
	ControlPlaneOperatorLogLevelAnnotation = "hypershift.openshift.io/control-plane-operator-log-level"

	// AcceptReleaseDigestAnnotation on a HostedCluster accepts the payload
	// its spec.release.image tag names now, when that tag has moved away
	// from the pinned payload (ReleaseImageTagMoved): its value is the new
	// payload's digest (sha256:...), as the condition and its event name
	// it. The hypershift-operator then pins that digest and rolls it out;
	// a digest the tag does not name is ignored, so that a tag moving once
	// more is never rolled out unseen.
	AcceptReleaseDigestAnnotation = "hypershift.openshift.io/accept-release-digest"

	// HostedControlPlaneLabel marks a control-plane namespace.
	HostedControlPlaneLabel = "hypershift.openshift.io/hosted-control-plane"

	// LeaderFencingLabel ("true") marks a control-plane namespace whose
	// control-plane-operator (and cluster-api manager) the API server
	// fences: the shared fencing bindings select it. The
	// hypershift-operator sets it on the namespaces it fences and drops it
	// when fencing is off.
	LeaderFencingLabel = "hypershift.openshift.io/leader-fencing"

	// SecretCopyLabel marks the Secrets the hypershift-operator copies, so
	// that it can watch those Secrets, and no other. Its value says which
	// copy: SecretCopyPullSecret, the HostedCluster's pull secret in its
	// control-plane namespace, or SecretCopyAdminKubeconfig, the hosted
	// cluster's admin kubeconfig in the HostedCluster's namespace.
	SecretCopyLabel = "hypershift.openshift.io/secret-copy"
	// SecretCopyPullSecret is the SecretCopyLabel of a pull secret copy.
	SecretCopyPullSecret = "pull-secret"
	// SecretCopyEncryptionKey is the SecretCopyLabel of a copy of a key
	// Secret of spec.secretEncryption, in the control-plane namespace.
	SecretCopyEncryptionKey = "encryption-key"
	// SecretCopyEtcdRestore is the SecretCopyLabel of what a cluster whose
	// etcd restores from a backup is given in its control-plane namespace.
	SecretCopyEtcdRestore = "etcd-restore"
	// SecretCopyAdminKubeconfig is the SecretCopyLabel of an admin
	// kubeconfig copy.
	SecretCopyAdminKubeconfig = "admin-kubeconfig"

	// AdminKubeconfigSecretName names the Secret in which the
	// control-plane-operator publishes the hosted cluster's admin
	// kubeconfig in the control-plane namespace (the HostedControlPlane's
	// status.kubeConfig names it too); the hypershift-operator watches
	// Secrets of that name.
	AdminKubeconfigSecretName = "admin-kubeconfig"
	// KubeconfigKey is the key of a kubeconfig in a kubeconfig Secret.
	KubeconfigKey = "kubeconfig"

	// ControlPlaneOperatorName names the control-plane-operator's
	// ServiceAccount, Role, RoleBinding and Deployment.
	ControlPlaneOperatorName = "control-plane-operator"

	// ControlPlaneOperatorLeaseName is the control-plane-operator's Lease in
	// the control-plane namespace.
	ControlPlaneOperatorLeaseName = "control-plane-operator-leader-elect"

	// HypershiftOperatorLeaseName is the hypershift-operator's Lease in its
	// own namespace.
	HypershiftOperatorLeaseName = "hypershift-operator-leader-elect"

	// OperatorShardsAnnotation, on the hypershift-operator's Lease, is the
	// shard count (--shards) of the replica that took it last; absent, one.
	// With more than one, HostedCluster <namespace>/<name> is reconciled by
	// the holder of the Lease <HypershiftOperatorLeaseName>-shard-<i>, i
	// being leaderelection.ShardOf(HostedClusterShardKey, count).
	OperatorShardsAnnotation = "hypershift.openshift.io/operator-shards"

	// OperatorShardLabel, "<i>-of-<count>" on a control-plane namespace,
	// says which hypershift-operator shard it belongs to when the operator
	// runs more than one shard and fences: the shard's fencing binding
	// selects it, and the API server refuses the operator's writes in it
	// by any pod but the holder of the shard's Lease.
	OperatorShardLabel = "hypershift.openshift.io/operator-shard"

	// OperateOnReleaseImageEnv names the control-plane-operator's environment
	// variable with the release image it was rolled out for, pinned by
	// digest like the HostedControlPlane's spec.releaseImage: the
	// hypershift-operator renders it, the control-plane-operator acts only on
	// a HostedControlPlane of that release.
	OperateOnReleaseImageEnv = "OPERATE_ON_RELEASE_IMAGE"

	// PullSecretName names the copy of the HostedCluster's pull secret in
	// its control-plane namespace: the hypershift-operator writes it, the
	// control-plane-operator's pods pull with it and the
	// control-plane-operator reads it to resolve the release.
	PullSecretName = "pull-secret"

	// SafeToDeleteWithClusterLabel marks a Secret that `hypershift create
	// cluster` created for a HostedCluster (its pull secret): `create
	// cluster` run again updates it, `destroy cluster` deletes it. A Secret
	// without it belongs to the user and is never changed or deleted.
	SafeToDeleteWithClusterLabel = "hypershift.openshift.io/safe-to-delete-with-cluster"

	// PodNameEnv is the environment variable (downward API metadata.name)
	// in which both operators, and the hosted components that need it, read
	// their own pod's name: an operator's leader identity.
	PodNameEnv = "POD_NAME"

	// MetricsPort is where both operators serve metrics.
	MetricsPort = 8080
	// HealthPort is where both operators serve their health and readiness
	// probes.
	HealthPort = 8081

	// MaxNamespaceLength is the longest namespace name Kubernetes accepts.
	MaxNamespaceLength = 63

	// FencingDenialPrefix starts the message of every write the API server
	// refuses because the writing control-plane-operator pod does not hold
	// the Lease: the hypershift-operator's policy writes it, the
	// control-plane-operator recognizes it.
	FencingDenialPrefix = "fenced: control-plane-operator pod"

	// OperatorFencingDenialPrefix starts the message of every write the
	// API server refuses because the writing hypershift-operator pod does
	// not hold the Lease of the shard the control-plane namespace is in.
	OperatorFencingDenialPrefix = "fenced: hypershift-operator pod"
)

// Condition types of HostedCluster and HostedControlPlane status.
const (
	// Available is True while the hosted control plane serves.
	Available = "Available"
	// Progressing is True while a rollout to a new release is under way.
	Progressing = "Progressing"
	// ValidConfiguration is False when the spec cannot be acted on.
	ValidConfiguration = "ValidConfiguration"
	// ValidReleaseImage is False when the release payload cannot be read.
	// A NodePool has it too, for its own spec.release.image.
	ValidReleaseImage = "ValidReleaseImage"
	// ReconciliationActive is False while spec.pausedUntil pauses the cluster.
	ReconciliationActive = "ReconciliationActive"
	// ReconciliationSucceeded is False when the last reconcile failed.
	ReconciliationSucceeded = "ReconciliationSucceeded"
	// ValidPKI is False when the control plane's certificates and keys
	// cannot be kept or issued, for example when a CA Secret does not parse.
	ValidPKI = "ValidPKI"
	// ReleaseImageTagMoved, on a HostedCluster, is True while the tag of
	// spec.release.image names another payload than the one the control
	// plane is pinned to (status.version.desired.image): the control plane
	// keeps running the pinned payload, and the message says how to roll
	// the new one out. Its reason is also that of the Warning event that
	// reports the move.
	ReleaseImageTagMoved = "ReleaseImageTagMoved"
	// WritesFenced, on a HostedControlPlane, is True once the API server
	// has refused writes of its control-plane-operator as not the Lease
	// holder's (the fence held); its message counts them and quotes the
	// last. The hypershift-operator relays each report as a Warning event
	// on the HostedCluster.
	WritesFenced = "WritesFenced"
	// SecretsEncrypted says whether every Secret of the hosted cluster is
	// stored encrypted with the active key (status.secretEncryption of the
	// HostedControlPlane): False while they are being rewritten after the
	// key changed, when a backup key must still be kept. The
	// hypershift-operator relays it to the HostedCluster.
	SecretsEncrypted = "SecretsEncrypted"
	// EtcdSnapshotRestored, on a HostedCluster created with
	// spec.etcd.restoreFrom, says whether its etcd started from the
	// snapshot: False while the backup is missing, incomplete or refused
	// (then no control plane is created) or while the members restore,
	// True once the cluster was first available.
	EtcdSnapshotRestored = "EtcdSnapshotRestored"
	// LeaderFencing, on a HostedCluster, says whether the API server is
	// seen to refuse writes by control-plane-operator pods that do not
	// hold the Lease: True only once a probe showed it.
	LeaderFencing = "LeaderFencing"
	// Monitoring, on a HostedCluster while the hypershift-operator runs
	// with --enable-monitoring, says whether the control-plane-operator's
	// metrics are offered to a Prometheus Operator (its Service and
	// ServiceMonitor).
	Monitoring = "Monitoring"
)

// Condition types of NodePool status, besides ValidReleaseImage (above),
// which a NodePool has for its own release.
const (
	// Ready is True while every node the pool asks for (spec.replicas) has
	// joined and is ready; its message is the MESSAGE of kubectl get np.
	Ready = "Ready"
	// AllMachinesReady is True while every machine of the pool is ready.
	AllMachinesReady = "AllMachinesReady"
	// AllNodesHealthy is True while every node of the pool is healthy.
	AllNodesHealthy = "AllNodesHealthy"
	// UpdatingVersion is True while the pool's nodes roll out to a new
	// release.
	UpdatingVersion = "UpdatingVersion"
	// SupportedVersionSkew is False when the pool's release is one its
	// HostedCluster's control plane does not support, for example a newer
	// one.
	SupportedVersionSkew = "SupportedVersionSkew"
	// ValidHostedCluster is False while the HostedCluster that
	// spec.clusterName names does not exist.
	ValidHostedCluster = "ValidHostedCluster"
	// ValidPlatformConfig is False when the pool's platform is one its
	// HostedCluster does not run machines of (platform Pod on a
	// HostedCluster of platform None).
	ValidPlatformConfig = "ValidPlatformConfig"
	// AutoscalingEnabled is True while an autoscaler, not spec.replicas,
	// sets the pool's size.
	AutoscalingEnabled = "AutoscalingEnabled"
)

// AsExpectedReason is the reason of a condition that is as it should be:
// Available=True, ValidConfiguration=True, Progressing=False after a
// rollout, and the like.
const AsExpectedReason = "AsExpected"

// Reasons of the conditions both operators set, by condition. Each is a
// contract: the CLI, the tests and the users' alerts match on them.
const (
	// InvalidConfigurationReason: ValidConfiguration=False, the spec cannot
	// render (a HostedCluster's control-plane-operator, a
	// HostedControlPlane's component).
	InvalidConfigurationReason = "InvalidConfiguration"
	// RollingOutReason: a HostedCluster's Progressing=True while its
	// control plane rolls out a release; a component's <Name>Available=False
	// while its workload rolls out.
	RollingOutReason = "RollingOut"
)

// Reasons of HostedControlPlane conditions, which the control-plane-operator
// sets and the hypershift-operator relays to the HostedCluster (Available,
// ValidConfiguration).
const (
	// MissingComponentImageReason: ValidReleaseImage=False, the payload has
	// no image for a component.
	MissingComponentImageReason = "MissingComponentImage"
	// UnusableCAReason: ValidPKI=False, a CA Secret holds no usable CA (a
	// CA is never replaced: it waits for a human).
	UnusableCAReason = "UnusableCA"
	// PKIErrorReason: ValidPKI=False for any other failure to keep the PKI.
	PKIErrorReason = "PKIError"
	// ComponentsUnavailableReason: Available=False, a component does not
	// serve; the message names them.
	ComponentsUnavailableReason = "ComponentsUnavailable"
	// EndpointUnknownReason: Available=False, the kube-apiserver's
	// endpoint is not known yet.
	EndpointUnknownReason = "EndpointUnknown"
	// KubeAPIServerNotReadyReason: Available=False, the kube-apiserver does
	// not answer /readyz at its endpoint.
	KubeAPIServerNotReadyReason = "KubeAPIServerNotReady"
	// WaitingForDependenciesReason: <Name>Available=False, what the
	// component depends on has not rolled out.
	WaitingForDependenciesReason = "WaitingForDependencies"
	// WorkloadNotFoundReason: <Name>Available=False, the workload does not
	// exist yet.
	WorkloadNotFoundReason = "WorkloadNotFound"
	// ReplicasUnavailableReason: <Name>Available=False, a replica is not
	// available.
	ReplicasUnavailableReason = "ReplicasUnavailable"
	// ClaimNotBoundReason: <Name>Available=False, a claim of the workload
	// is not bound to a volume.
	ClaimNotBoundReason = "ClaimNotBound"
	// SecretsRewrittenReason: SecretsEncrypted=True, every Secret was
	// rewritten with the active key.
	SecretsRewrittenReason = "SecretsRewritten"
	// RewritingSecretsReason: SecretsEncrypted=False, Secrets are being
	// rewritten with a new active key, or wait for the kube-apiserver to
	// roll out with it.
	RewritingSecretsReason = "RewritingSecrets"
	// WritesRefusedReason: WritesFenced=True, the API server refused writes
	// of the control-plane-operator as not the Lease holder's.
	WritesRefusedReason = "WritesRefused"
)

// Reasons of HostedCluster conditions, which the hypershift-operator sets.
const (
	// ReconciliationPausedReason: ReconciliationActive=False while
	// spec.pausedUntil pauses the cluster.
	ReconciliationPausedReason = "ReconciliationPaused"
	// ReconciliationErrorReason: ReconciliationSucceeded=False, the last
	// pass failed; the message is its error.
	ReconciliationErrorReason = "ReconciliationError"
	// ReconciliationSucceededReason: ReconciliationSucceeded=True.
	ReconciliationSucceededReason = "ReconciliationSucceeded"
	// PinnedBySpecReason: ReleaseImageTagMoved=False, spec.release.image
	// names a digest and cannot move.
	PinnedBySpecReason = "PinnedBySpec"
	// RolloutBlockedReason: Progressing=True, the release cannot be rolled
	// out because the control-plane-operator's Deployment cannot be
	// applied.
	RolloutBlockedReason = "RolloutBlocked"
	// ControlPlaneOperatorRollingOutReason: Progressing=True, the
	// control-plane-operator does not run the release yet.
	ControlPlaneOperatorRollingOutReason = "ControlPlaneOperatorRollingOut"
	// WaitingForControlPlaneReason: Available=False, the HostedControlPlane
	// does not exist or has not reported yet.
	WaitingForControlPlaneReason = "WaitingForControlPlane"
	// ControlPlaneNamespaceDeletingReason: Available=False while someone
	// else deletes the control-plane namespace; the control plane is built
	// again once it is gone. Also the reason of the Warning event.
	ControlPlaneNamespaceDeletingReason = "ControlPlaneNamespaceDeleting"
	// ControlPlaneOperatorSilentReason: Available=Unknown, no
	// control-plane-operator has renewed the Lease for its lease duration.
	ControlPlaneOperatorSilentReason = "ControlPlaneOperatorSilent"
	// ControlPlaneNodeLostReason: Available=False, the control plane's
	// kube-apiservers, or a quorum of its etcd members, run only on nodes
	// whose kubelets have stopped heartbeating.
	ControlPlaneNodeLostReason = "ControlPlaneNodeLost"
	// ServiceMonitorCRDMissingReason: Monitoring=False, the cluster has no
	// ServiceMonitor CRD.
	ServiceMonitorCRDMissingReason = "ServiceMonitorCRDMissing"
)

// Reasons of NodePool conditions, which the hypershift-operator sets,
// besides WaitingForControlPlaneReason, RollingOutReason and the release
// reasons above.
const (
	// HostedClusterNotFoundReason: ValidHostedCluster and Ready False, the
	// HostedCluster spec.clusterName names does not exist.
	HostedClusterNotFoundReason = "HostedClusterNotFound"
	// InvalidNetworkReason: Ready=False, the HostedCluster's networks give
	// no DNS address for the pool's kubelets.
	InvalidNetworkReason = "InvalidNetwork"
	// NodePoolDeletingReason: Ready=False while the pool is deleted and
	// waits for its machines.
	NodePoolDeletingReason = "Deleting"
	// PlatformMismatchReason: ValidPlatformConfig and Ready False, the
	// pool's platform is Pod, its HostedCluster's is not.
	PlatformMismatchReason = "PlatformNotSupportedByCluster"
	// MachinesNotReadyReason: AllMachinesReady=False, some machines are not
	// ready.
	MachinesNotReadyReason = "MachinesNotReady"
	// WaitingForNodesReason: Ready=False until every node the pool asks for
	// joined and is ready.
	WaitingForNodesReason = "WaitingForNodes"
	// NodeNotReadyReason: AllNodesHealthy=False, some nodes are not ready.
	NodeNotReadyReason = "NodeNotReady"
	// HostedAPIUnreachableReason: AllNodesHealthy=Unknown and Ready=False,
	// the hosted cluster's API server cannot be reached.
	HostedAPIUnreachableReason = "HostedAPIUnreachable"
	// NoMachineImageReason: ValidReleaseImage=False, the payload of a pool
	// of platform Pod names no machine (or pause) image.
	NoMachineImageReason = "NoMachineImage"
)

// Reasons of a NodePool's SupportedVersionSkew condition.
const (
	// NodePoolNewerReason: False, the pool's release is newer than its
	// HostedCluster's.
	NodePoolNewerReason = "NodePoolVersionNewerThanCluster"
	// NodePoolTooOldReason: False, the pool's release is more minor
	// versions older than its HostedCluster's than is supported.
	NodePoolTooOldReason = "NodePoolVersionTooOld"
	// ClusterVersionUnknownReason: Unknown, the HostedCluster reports no
	// version yet.
	ClusterVersionUnknownReason = "ClusterVersionUnknown"
	// UnparsableVersionReason: False or Unknown, the pool's or the
	// HostedCluster's version is no version.
	UnparsableVersionReason = "UnparsableVersion"
)

// Reasons of a HostedCluster's LeaderFencing condition.
const (
	// FencingDisabledReason: False, the operator runs with
	// --enable-fencing=false.
	FencingDisabledReason = "Disabled"
	// FencingUnsupportedReason: False, the API server cannot fence.
	FencingUnsupportedReason = "Unsupported"
	// FencingPolicyMissingReason: False, a cluster-wide fencing object does
	// not exist.
	FencingPolicyMissingReason = "FencingPolicyMissing"
	// FenceUnverifiedReason: Unknown, the fence could not be probed.
	FenceUnverifiedReason = "FenceUnverified"
	// FenceNotInForceReason: False, the API server admitted a write the
	// fence must refuse.
	FenceNotInForceReason = "FenceNotInForce"
	// FenceStaleReason: False, the fence judges against another holder than
	// the Lease names. Also the reason of the Warning event when the
	// binding is re-created for it.
	FenceStaleReason = "FenceStale"
	// FenceWedgedReason: False, the fence stayed stale after its binding
	// was re-created; only a kube-apiserver restart clears it. Also the
	// reason of the Warning event.
	FenceWedgedReason = "FenceWedged"
)

// Reasons of EtcdSnapshotRestored.
const (
	// EtcdBackupNotFoundReason: False, spec.etcd.restoreFrom names no
	// EtcdBackup; nothing is created until it exists.
	EtcdBackupNotFoundReason = "EtcdBackupNotFound"
	// EtcdBackupIncompleteReason: False, the EtcdBackup has no snapshot
	// (it is running or failed); nothing is created until it completes.
	EtcdBackupIncompleteReason = "EtcdBackupIncomplete"
	// EtcdSnapshotRefusedReason: False, the snapshot file is missing or
	// does not match its backup's SHA-256 or etcd's own hash; nothing is
	// created. The message is the check's.
	EtcdSnapshotRefusedReason = "EtcdSnapshotRefused"
	// EtcdSnapshotRestoringReason: False, the snapshot was checked and the
	// members restore it.
	EtcdSnapshotRestoringReason = "Restoring"
	// EtcdSnapshotRestoredReason: True.
	EtcdSnapshotRestoredReason = "SnapshotRestored"
)

// EtcdRestoreTransferSecret is the Secret of a control-plane namespace
// with the certificate and token etcd's members download the snapshot of
// spec.etcd.restoreFrom with; EtcdRestoreEncryptionConfigSecret holds the
// backup's EncryptionConfiguration, whose keys the kube-apiserver reads
// the restored Secrets with.
const (
	EtcdRestoreTransferSecret         = "etcd-restore-transfer"
	EtcdRestoreEncryptionConfigSecret = "etcd-restore-encryption-config"
)

// AdminKubeconfigName names the copy of a HostedCluster's admin
// kubeconfig in its namespace: <name>-admin-kubeconfig, as in HyperShift.
func AdminKubeconfigName(hostedCluster string) string {
	return hostedCluster + "-admin-kubeconfig"
}

// ControlPlaneNamespace returns the name of the namespace that holds the
// control plane of the HostedCluster namespace/name: "<namespace>-<name>",
// with dots in the name replaced by dashes so the result is a DNS label.
//
// Different HostedClusters can map to one name (a-b/c and a/b-c, a/b.c and
// a/b-c). The namespace therefore belongs to the HostedCluster its
// ClusterAnnotation names, set when the hypershift-operator created it; any
// other HostedCluster mapping to it is refused with
// ControlPlaneNamespaceConflictMessage, and a namespace that exists without
// the annotation is never adopted.
func ControlPlaneNamespace(namespace, name string) string {
	return namespace + "-" + strings.ReplaceAll(name, ".", "-")
}

// Reasons of ValidReleaseImage=False (and of Available and Progressing
// while the cluster has not started), by what reading the release payload
// met. The hypershift-operator sets them; `hypershift create cluster
// --wait` stops at once on the ones only the user can fix (not found,
// malformed).
const (
	ReleaseImageNotFoundReason     = "ReleaseImageNotFound"
	ReleaseImageMalformedReason    = "ReleaseImageMalformed"
	ReleaseImageUnauthorizedReason = "ReleaseImageUnauthorized"
	ReleaseImageUnreachableReason  = "ReleaseImageUnreachable"
	ReleaseImageUnavailableReason  = "ReleaseImageUnavailable"
	// PullSecretUnavailableReason is the reason of ValidConfiguration=False
	// when the HostedCluster's pull secret cannot be read.
	PullSecretUnavailableReason = "PullSecretUnavailable"
)

// Reasons of ValidConfiguration=False (and of Available, on the
// HostedControlPlane and the HostedCluster) for a spec the management
// cluster cannot act on. Only a change of the spec, or of what else the
// management cluster holds, can help: `hypershift create cluster --wait`
// and `update cluster --wait` stop at once on them.
const (
	// RefusedByAPIServerReason: the management cluster's API server refused
	// an object rendered from the spec (invalid, or forbidden by a policy);
	// the message quotes it.
	RefusedByAPIServerReason = "RefusedByAPIServer"
	// NodePortConflictReason: another HostedCluster, created earlier, asks
	// for the same APIServer node port; the message names it.
	NodePortConflictReason = "NodePortConflict"
)

// NodePortConflictMessage says that port, the APIServer node port a
// HostedCluster asks for, is held by HostedCluster holder
// (<namespace>/<name>). The operator's condition and the CLI use the same
// words.
func NodePortConflictMessage(port int32, holder string) string {
	return fmt.Sprintf("Node port %d of the APIServer is already asked for by HostedCluster %s: choose another port, or leave it unset for the management cluster to allocate one", port, holder)
}

// ControlPlaneNamespaceConflictReason is the reason of ValidConfiguration=False
// when a HostedCluster's control-plane namespace belongs to someone else.
const ControlPlaneNamespaceConflictReason = "ControlPlaneNamespaceConflict"

// ControlPlaneNamespaceConflictMessage says why HostedCluster cluster
// (<namespace>/<name>) cannot use control-plane namespace ns, whose
// ClusterAnnotation is owner ("" when it has none). The operator's condition
// and the CLI use the same words.
func ControlPlaneNamespaceConflictMessage(cluster, ns, owner string) string {
	if owner == "" {
		return "Control-plane namespace " + ns + " already exists and was not created for a HostedCluster (it has no " +
			ClusterAnnotation + " annotation); HostedCluster " + cluster +
			" does not adopt it: choose another name or namespace, or delete that namespace"
	}
	return "Control-plane namespace " + ns + " belongs to HostedCluster " + owner + "; HostedCluster " + cluster +
		" maps to the same namespace and cannot use it: choose another name or namespace"
}

// The cluster-api manager of a HostedCluster of platform Pod, which the
// hypershift-operator runs in the control-plane namespace: it makes and
// replaces the NodePools' machines (MachineDeployments of PodMachines).
const (
	// ClusterAPIName names its ServiceAccount, Role, RoleBinding and
	// Deployment.
	ClusterAPIName = "cluster-api"
	// ClusterAPILeaseName is its Lease in the control-plane namespace
	// (cluster-api's manager fixes the name).
	ClusterAPILeaseName = "controller-leader-election-capi"
	// ClusterAPIWebhookSecretName names the Secret, issued by the
	// control-plane-operator's PKI, with the serving certificate of the
	// webhook server the manager always starts (nothing calls it: the
	// cluster-api CRDs are installed without webhooks).
	ClusterAPIWebhookSecretName = "cluster-api-webhook-tls"
	// ClusterAPIManagerImageAnnotation on a HostedCluster overrides the
	// cluster-api manager image the release payload names (HyperShift's
	// annotation).
	ClusterAPIManagerImageAnnotation = "hypershift.openshift.io/capi-manager-image"
)

// MachineImageCacheName names the DaemonSet that keeps the machine image of
// a HostedCluster of platform Pod on every node of the management cluster
// (the hypershift-operator runs it in the control-plane namespace), so that
// a new machine's Pod starts without pulling it.
const MachineImageCacheName = "machine-image-cache"

// Annotations of a HostedCluster that size its control plane, HyperShift's;
// the hypershift-operator copies them to the HostedControlPlane
// (CopiedToControlPlane), where the control-plane-operator reads them.
const (
	// ResourceRequestOverrideAnnotationPrefix, followed by
	// /<deployment>.<container>, overrides that container's requests:
	// memory=<quantity>,cpu=<quantity>, either or both (e.g.
	// resource-request-override.hypershift.openshift.io/kube-apiserver.kube-apiserver: memory=1Gi).
	ResourceRequestOverrideAnnotationPrefix = "resource-request-override.hypershift.openshift.io"
	// KubeAPIServerGoMemoryLimitAnnotation sets the kube-apiserver's
	// GOMEMLIMIT (e.g. 800MiB); by default it is 80% of its memory limit.
	KubeAPIServerGoMemoryLimitAnnotation = "hypershift.openshift.io/kube-apiserver-gomemlimit"
	// KubeAPIServerGOGCAnnotation sets the kube-apiserver's GOGC (a
	// percentage, or off); 50 when unset, which keeps its heap about a
	// fifth smaller than Go's default of 100 (make bench-levers).
	KubeAPIServerGOGCAnnotation = "hypershift.openshift.io/kube-apiserver-gogc"
)

// CopiedToControlPlane reports whether a HostedCluster annotation is copied
// to its HostedControlPlane.
func CopiedToControlPlane(key string) bool {
	return strings.HasPrefix(key, ResourceRequestOverrideAnnotationPrefix+"/") ||
		key == KubeAPIServerGoMemoryLimitAnnotation || key == KubeAPIServerGOGCAnnotation
}

// HostedClusterShardKey is what a HostedCluster's hypershift-operator
// shard is computed from (OperatorShardsAnnotation).
func HostedClusterShardKey(namespace, name string) string { return namespace + "/" + name }
