package etcd

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/control-plane-operator/component"
	"github.com/hypershift-le/hypershift/control-plane-operator/pki"
	"github.com/hypershift-le/hypershift/support/podspec"
	"github.com/hypershift-le/hypershift/support/resources"
)

// Where etcd finds its data and certificates.
const (
	dataVolume = "data"
	dataMount  = "/var/lib/etcd"
	dataDir    = dataMount + "/data"
	serverTLS  = "/etc/etcd/tls/server"
	peerTLS    = "/etc/etcd/tls/peer"
	// DataSize is the size each member's claim asks for.
	DataSize = "8Gi"
)

// Resources are each member's: the working set of an idle member is 25-26
// MiB (make bench-controlplanes, 10 control planes), and grows with the
// data, whose pages the kernel keeps in the member's memory while there is
// room, so the request leaves it room to double; the limit (kernel page
// cache is reclaimed before anything is killed) bounds a member whose
// database grows towards its quota. The CPU request is what a converged
// member used, 14-15m (make bench-controlplanes, 10 control planes, mean
// over 2 minutes), with room; no CPU limit (a throttled member misses its
// heartbeats).
var Resources = resources.Defaults{CPU: "20m", Memory: "64Mi", MemoryLimit: "1Gi"}

// Workload implements component.Component: the StatefulSet and, with
// several members, a PodDisruptionBudget that keeps a quorum.
func (Component) Workload(in component.Inputs) (*component.Workload, error) {
	hcp := in.HostedControlPlane
	image, err := in.Image(Name, ImageTag)
	if err != nil {
		return nil, err
	}
	members := Members(hcp)
	aliases := make([]corev1.HostAlias, 0, len(members))
	for _, member := range members {
		ip, err := in.ClusterIP(member)
		if err != nil {
			return nil, err
		}
		aliases = append(aliases, corev1.HostAlias{IP: ip, Hostnames: []string{member}})
	}
	res, err := in.Resources(Name, Name, Resources)
	if err != nil {
		return nil, err
	}
	container := component.Container(Name, image, []string{"/usr/bin/etcd"}, args(hcp.Namespace, members), res)
	container.Ports = []corev1.ContainerPort{
		component.TCPPort("client", ClientPort), component.TCPPort("peer", PeerPort), component.TCPPort("metrics", MetricsPort),
	}
	// Started once it first serves a linearizable read (a member of three
	// once there is a quorum): Ready a second after, not at a probe
	// period's end.
	container.StartupProbe = podspec.StartupProbe("/readyz", "metrics", corev1.URISchemeHTTP)
	container.LivenessProbe = podspec.HTTPProbe("/livez", "metrics", corev1.URISchemeHTTP, 0, 10, 5)
	container.ReadinessProbe = podspec.HTTPProbe("/readyz", "metrics", corev1.URISchemeHTTP, 0, 10, 3)
	container.VolumeMounts = []corev1.VolumeMount{
		{Name: dataVolume, MountPath: dataMount},
		component.Mount("server-tls", serverTLS),
		component.Mount("peer-tls", peerTLS),
	}
	pod := component.PodSpec(hcp, container,
		component.SecretVolume("server-tls", pki.EtcdServerSecret),
		component.SecretVolume("peer-tls", pki.EtcdPeerSecret))
	pod.HostAliases = aliases
	if err := withRestore(in, &pod, members); err != nil {
		return nil, err
	}
	// One member per node: a node lost loses one member, not the quorum.
	pod.TopologySpreadConstraints = component.Spread(Name, int32(len(members)))

	set := &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: appsv1.SchemeGroupVersion.String(), Kind: "StatefulSet"},
		ObjectMeta: component.ObjectMeta(hcp, Name, Name),
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To(int32(len(members))),
			Selector: &metav1.LabelSelector{MatchLabels: component.Selector(Name)},
			// Every member must start to reach a quorum: none is ready alone.
			PodManagementPolicy: appsv1.ParallelPodManagement,
			UpdateStrategy:      appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType},
			PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
				WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
				WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
			},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: in.PodTemplateMeta(Name, pki.EtcdServerSecret, pki.EtcdPeerSecret),
				Spec:       pod,
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: dataVolume, Labels: component.Labels(Name)},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(DataSize)}},
					VolumeMode:  ptr.To(corev1.PersistentVolumeFilesystem),
				},
			}},
		},
	}
	workload := &component.Workload{Object: set}
	if len(members) > 1 {
		workload.Extras = []client.Object{disruptionBudget(in, len(members))}
	}
	return workload, nil
}

// SingleMemberElectionTimeout is a lone member's --election-timeout, the
// shortest etcd takes with its 100ms heartbeat (five heartbeats). A member
// with no peers leads once its election timer fires (etcd fast-forwards all
// but one tick of the timeout at start, then waits a random part of one
// more timeout), and nothing can be served before: with the default 1s it
// led about 1.1s after its start in a control plane's pod, half of etcd's
// time from running to Ready. With no peer there is no vote to lose and no
// heartbeat to miss, so the shorter timeout risks nothing; members of three
// keep etcd's defaults, which their peers' round trips are sized for.
const SingleMemberElectionTimeout = "500"

// args is etcd's command line: TLS with client certificates for clients
// and peers, listening on the pod's address only; a lone member elects
// itself sooner (SingleMemberElectionTimeout).
func args(namespace string, members []string) []string {
	podIP, podName := "$("+component.PodIPEnv+")", "$("+hyperv1.PodNameEnv+")"
	a := []string{
		"--name=" + podName,
		"--data-dir=" + dataDir,
		fmt.Sprintf("--listen-client-urls=https://%s:%d", podIP, ClientPort),
		fmt.Sprintf("--advertise-client-urls=https://%s:%d", podIP, ClientPort),
		fmt.Sprintf("--listen-peer-urls=https://%s:%d", podIP, PeerPort),
		"--initial-advertise-peer-urls=" + peerURL(podName),
		"--initial-cluster=" + initialCluster(members),
		"--initial-cluster-state=new",
		"--initial-cluster-token=" + namespace,
		fmt.Sprintf("--listen-metrics-urls=http://%s:%d", podIP, MetricsPort),
		"--client-cert-auth=true",
		"--trusted-ca-file=" + serverTLS + "/" + pki.CACertKey,
		"--cert-file=" + serverTLS + "/" + pki.TLSCertKey,
		"--key-file=" + serverTLS + "/" + pki.TLSKeyKey,
		"--peer-client-cert-auth=true",
		"--peer-trusted-ca-file=" + peerTLS + "/" + pki.CACertKey,
		"--peer-cert-file=" + peerTLS + "/" + pki.TLSCertKey,
		"--peer-key-file=" + peerTLS + "/" + pki.TLSKeyKey,
		// A peer is who its certificate says, signed by the etcd signer
		// and named EtcdPeerUser. The address it connects from is not
		// checked against that certificate: members reach each other
		// through their Services, so a peer's connection comes from its
		// pod's address (or a proxy's), which no certificate can name
		// ahead of time, and there is no cluster DNS to map it back.
		"--peer-cert-allowed-cn=" + pki.EtcdPeerUser,
		"--peer-skip-client-san-verification=true",
	}
	if len(members) == 1 {
		a = append(a, "--election-timeout="+SingleMemberElectionTimeout)
	}
	return a
}

// RestoreImageTag is the payload's image of the restore init container,
// which holds the control-plane-operator.
const RestoreImageTag = "hypershift"

// restoreTransferDir is where the restore init container finds the
// transfer Secret.
const restoreTransferDir = "/etc/etcd-restore/transfer"

// withRestore adds, for a cluster created from a backup, the init
// container that restores each member's data directory from the snapshot
// the hypershift-operator serves (`control-plane-operator etcd-snapshot
// restore`, the URL in the transfer Secret, so that the template does not
// change once the serving pod is gone): with the member's own name and the cluster's initial
// membership, so that all members restore one cluster. A member whose
// data directory holds a member already starts at once, without the
// transfer Secret (optional: it is deleted once the cluster is restored)
// or the server: a restarted member is never rolled back.
func withRestore(in component.Inputs, pod *corev1.PodSpec, members []string) error {
	hcp := in.HostedControlPlane
	from := hcp.Spec.Etcd.RestoreFrom
	if from == nil {
		return nil
	}
	image, err := in.Image(Name, RestoreImageTag)
	if err != nil {
		return err
	}
	res, err := in.Resources(Name, "restore", RestoreResources)
	if err != nil {
		return err
	}
	podName := "$(" + hyperv1.PodNameEnv + ")"
	restore := component.Container("restore", image, []string{"/usr/bin/control-plane-operator"}, []string{
		"etcd-snapshot", "restore",
		"--transfer-dir=" + restoreTransferDir,
		"--data-dir=" + dataDir,
		"--name=" + podName,
		"--initial-cluster=" + initialCluster(members),
		"--initial-cluster-token=" + hcp.Namespace,
		"--initial-advertise-peer-urls=" + peerURL(podName),
	}, res)
	restore.VolumeMounts = []corev1.VolumeMount{
		{Name: dataVolume, MountPath: dataMount},
		component.Mount("restore-transfer", restoreTransferDir),
	}
	transfer := component.SecretVolume("restore-transfer", hyperv1.EtcdRestoreTransferSecret)
	transfer.Secret.Optional = ptr.To(true)
	pod.InitContainers = append(pod.InitContainers, restore)
	pod.Volumes = append(pod.Volumes, transfer)
	return nil
}

// RestoreResources are the restore init container's: it streams the
// snapshot to disk and restores it with etcdutl, which reads the database
// through a memory map (page cache, reclaimed before anything is killed).
var RestoreResources = resources.Defaults{CPU: "10m", Memory: "32Mi", MemoryLimit: "512Mi"}

// disruptionBudget keeps a quorum through voluntary disruptions.
func disruptionBudget(in component.Inputs, members int) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: policyv1.SchemeGroupVersion.String(), Kind: "PodDisruptionBudget"},
		ObjectMeta: component.ObjectMeta(in.HostedControlPlane, Name, Name),
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(int32(members/2 + 1))),
			Selector:     &metav1.LabelSelector{MatchLabels: component.Selector(Name)},
			// A member that is not ready counts for no quorum: evicting it
			// never waits.
			UnhealthyPodEvictionPolicy: ptr.To(policyv1.AlwaysAllow),
		},
	}
}
