package etcdbackup

import (
	"fmt"
	"net"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/podspec"
)

// What the control-plane-operator's `etcd-snapshot` commands read; the
// control-plane-operator's etcdsnapshot package defines the same names
// (a test checks they agree).
const (
	// TransferCertKey holds the certificate the serving pod presents and
	// the receiving pod pins.
	TransferCertKey = "tls.crt"
	// TransferKeyKey holds its private key (only in the serving side's
	// copy).
	TransferKeyKey = "tls.key"
	// TransferTokenKey holds the bearer token a download presents.
	TransferTokenKey = "token"
	// TransferPort is where the serving pod listens.
	TransferPort = 8443
	// TransferPath is the snapshot's URL path.
	TransferPath = "/snapshot"

	// etcdClientSecret holds the kube-apiserver's client certificate for
	// etcd (ca.crt, tls.crt, tls.key), which the snapshot is taken with.
	etcdClientSecret = "etcd-client-tls"
	// encryptionConfigSecret holds the kube-apiserver's
	// EncryptionConfiguration under encryptionConfigKey.
	encryptionConfigSecret = "kube-apiserver-encryption-config"
	encryptionConfigKey    = "config.yaml"
	// etcdClientService is etcd's client Service; its certificate names it.
	etcdClientService = "etcd-client"
	etcdClientPort    = 2379

	transferDir  = "/etc/etcd-snapshot/transfer"
	etcdTLSDir   = "/etc/etcd-snapshot/etcd-client"
	workDir      = "/var/lib/etcd-snapshot"
	backupDir    = "/backup"
	snapshotCmd  = "etcd-snapshot"
	cpoBinary    = "/usr/bin/control-plane-operator"
	containerCPO = "etcd-snapshot"

	// deadline bounds each Job: a snapshot of a hosted etcd (8 GiB quota
	// at most) is written in well under it on any disk.
	deadline = 15 * 60
)

// BackupLabel marks the objects made for an EtcdBackup; its value is the
// EtcdBackup's name. The manager caches only Jobs that carry it.
const BackupLabel = "hypershift.openshift.io/etcd-backup"

// ownerAnnotation names the EtcdBackup (namespace/name) an object in a
// control-plane namespace was made for: owner references cannot cross
// namespaces.
const ownerAnnotation = "hypershift.openshift.io/etcd-backup"

// JobName names both Jobs of an EtcdBackup, the serving one in the
// control-plane namespace and the receiving one in the EtcdBackup's.
func JobName(backup string) string { return "etcd-backup-" + backup }

// TransferSecretName names the Secrets holding a transfer's certificate
// and token, one in each namespace.
func TransferSecretName(backup string) string { return "etcd-backup-" + backup + "-transfer" }

// serveJob renders the Job that takes the snapshot from etcd and serves it
// once, in the control-plane namespace: the only place etcd's client
// certificate is. It reaches etcd through its client Service's ClusterIP
// under the name its certificate carries.
func serveJob(backup *hyperv1.EtcdBackup, namespace, image string, pullSecrets []corev1.LocalObjectReference, etcdIP string) *batchv1.Job {
	args := []string{
		snapshotCmd, "serve",
		"--etcd-endpoint=https://" + net.JoinHostPort(etcdIP, strconv.Itoa(etcdClientPort)),
		"--etcd-server-name=" + etcdClientService,
		"--etcd-tls-dir=" + etcdTLSDir,
		"--transfer-dir=" + transferDir,
		"--work-dir=" + workDir,
		fmt.Sprintf("--listen=:%d", TransferPort),
		"--downloads=1",
	}
	c := container(image, args)
	c.Ports = []corev1.ContainerPort{{Name: "transfer", ContainerPort: TransferPort, Protocol: corev1.ProtocolTCP}}
	// Ready once the snapshot is taken: the receiving Job is made then,
	// with this pod's address.
	c.ReadinessProbe = readiness()
	c.VolumeMounts = []corev1.VolumeMount{
		{Name: "transfer", MountPath: transferDir, ReadOnly: true},
		{Name: "etcd-client", MountPath: etcdTLSDir, ReadOnly: true},
		{Name: "work", MountPath: workDir},
	}
	volumes := []corev1.Volume{
		secretVolume("transfer", TransferSecretName(backup.Name)),
		secretVolume("etcd-client", etcdClientSecret),
		{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("9Gi"))}}},
	}
	job := job(backup, namespace, c, volumes, pullSecrets)
	job.Annotations = map[string]string{ownerAnnotation: backup.Namespace + "/" + backup.Name}
	return job
}

// readiness is the serving container's probe: its health endpoint
// answers once the snapshot is taken or checked.
func readiness() *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("transfer"), Scheme: corev1.URISchemeHTTPS}},
		PeriodSeconds:    1,
		FailureThreshold: 1,
	}
}

// receiveJob renders the Job that downloads the snapshot from the serving
// pod at address and writes it to the EtcdBackup's claim.
func receiveJob(backup *hyperv1.EtcdBackup, image, pullSecret, address string) *batchv1.Job {
	url := "https://" + net.JoinHostPort(address, strconv.Itoa(TransferPort)) + TransferPath
	c := container(image, []string{
		snapshotCmd, "receive",
		"--url=" + url,
		"--transfer-dir=" + transferDir,
		"--output=" + backupDir + "/" + hyperv1.EtcdBackupFileName(backup.Name),
	})
	c.VolumeMounts = []corev1.VolumeMount{
		{Name: "transfer", MountPath: transferDir, ReadOnly: true},
		{Name: "backup", MountPath: backupDir},
	}
	volumes := []corev1.Volume{
		secretVolume("transfer", TransferSecretName(backup.Name)),
		{Name: "backup", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
			ClaimName: backup.Spec.Storage.PersistentVolumeClaim.ClaimName,
		}}},
	}
	job := job(backup, backup.Namespace, c, volumes, []corev1.LocalObjectReference{{Name: pullSecret}})
	job.OwnerReferences = []metav1.OwnerReference{ownerReference(backup)}
	return job
}

// job is a Job of one pod that is not retried: a failed transfer is
// reported, and a new EtcdBackup takes a new snapshot.
func job(backup *hyperv1.EtcdBackup, namespace string, c corev1.Container, volumes []corev1.Volume, pullSecrets []corev1.LocalObjectReference) *batchv1.Job {
	labels := map[string]string{BackupLabel: backup.Name}
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: batchv1.SchemeGroupVersion.String(), Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: JobName(backup.Name), Namespace: namespace, Labels: labels},
		Spec: batchv1.JobSpec{
			BackoffLimit:          ptr.To(int32(0)),
			ActiveDeadlineSeconds: ptr.To(int64(deadline)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy:                 corev1.RestartPolicyNever,
					AutomountServiceAccountToken:  ptr.To(false),
					EnableServiceLinks:            ptr.To(false),
					TerminationGracePeriodSeconds: ptr.To(int64(5)),
					SecurityContext:               podSecurityContext(),
					ImagePullSecrets:              pullSecrets,
					Containers:                    []corev1.Container{c},
					Volumes:                       volumes,
				},
			},
		},
	}
}

// podSecurityContext is the restricted one, with the volumes' files
// group-owned by the pod's group so that the snapshot can be written to a
// claim whatever user its volume belongs to.
func podSecurityContext() *corev1.PodSecurityContext {
	sc := podspec.RestrictedPodSecurityContext()
	sc.FSGroup = ptr.To(int64(65532))
	return sc
}

func container(image string, args []string) corev1.Container {
	return corev1.Container{
		Name:                     containerCPO,
		Image:                    image,
		ImagePullPolicy:          corev1.PullIfNotPresent,
		Command:                  []string{cpoBinary},
		Args:                     args,
		SecurityContext:          podspec.RestrictedContainerSecurityContext(),
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		// A snapshot is streamed to and from disk: the process holds a
		// buffer, not the database.
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
		},
	}
}

func secretVolume(name, secret string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: secret, DefaultMode: ptr.To(int32(0o440)),
	}}}
}

func ownerReference(backup *hyperv1.EtcdBackup) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: hyperv1.GroupVersion.String(), Kind: "EtcdBackup",
		Name: backup.Name, UID: backup.UID, Controller: ptr.To(true),
	}
}
