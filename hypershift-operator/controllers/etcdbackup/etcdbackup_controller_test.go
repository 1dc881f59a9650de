package etcdbackup

import (
	"errors"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/control-plane-operator/components/etcd"
	"github.com/hypershift-le/hypershift/control-plane-operator/etcdsnapshot"
	"github.com/hypershift-le/hypershift/control-plane-operator/pki"
	"github.com/hypershift-le/hypershift/support/conditions"
	"github.com/hypershift-le/hypershift/support/leaderelection"
	"github.com/hypershift-le/hypershift/support/testutil"
	"github.com/hypershift-le/hypershift/test/testenv"
)

var env *testenv.Env

// The real Job controller runs the Jobs' pods' bookkeeping; the tests act
// as the kubelet, which envtest has not: they set the pods' status.
func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	os.Exit(testenv.Main(m, testenv.Options{
		SkipAdmissionPolicies:        true,
		ControllerManager:            true,
		ControllerManagerControllers: []string{"job-controller", "garbage-collector-controller"},
	}, &env))
}

// TestTransferNamesMatchTheCommand: the Jobs pass the files and the port
// the control-plane-operator's etcd-snapshot commands read.
func TestTransferNamesMatchTheCommand(t *testing.T) {
	if TransferCertKey != etcdsnapshot.TransferCertKey || TransferKeyKey != etcdsnapshot.TransferKeyKey ||
		TransferTokenKey != etcdsnapshot.TransferTokenKey || TransferPort != etcdsnapshot.TransferPort || TransferPath != etcdsnapshot.SnapshotPath {
		t.Fatal("the transfer Secret's keys, port or path differ from the control-plane-operator's etcdsnapshot package")
	}
	if etcdClientSecret != pki.EtcdClientSecret || encryptionConfigSecret != pki.EncryptionConfigSecret || encryptionConfigKey != pki.EncryptionConfigKey ||
		etcdClientService != etcd.ClientServiceName || etcdClientPort != etcd.ClientPort {
		t.Fatal("the names of etcd's client certificate, Service or port, or of the encryption configuration, differ from the control-plane-operator's")
	}
}

// TestEtcdBackupWritesTheSnapshotThroughTwoJobs follows one EtcdBackup:
// waiting for its cluster, its availability and its claim; then a Job in
// the control-plane namespace takes the snapshot, a Job beside the claim
// receives it from that pod's address once it is ready, and the
// receiver's report becomes the status; then nothing made for the backup
// is left, and a further pass writes nothing.
func TestEtcdBackupWritesTheSnapshotThroughTwoJobs(t *testing.T) {
	ns := env.Namespace(t)
	r := &Reconciler{Client: env.Client, APIReader: env.Client}
	backup := newBackup(t, ns, "nightly")
	reconcile := reconciler(t, r, backup)

	reconcile()
	expectCondition(t, backup, metav1.ConditionFalse, hyperv1.EtcdBackupWaitingReason, "HostedCluster demo not found in namespace "+ns)
	if !slices.Contains(backup.Finalizers, Finalizer) {
		t.Fatalf("finalizers %v: want %s", backup.Finalizers, Finalizer)
	}

	hc := newCluster(t, ns)
	reconcile()
	expectCondition(t, backup, metav1.ConditionFalse, hyperv1.EtcdBackupWaitingReason, "waiting for HostedCluster demo to be available")

	setAvailable(t, hc)
	res := reconcile()
	expectCondition(t, backup, metav1.ConditionFalse, hyperv1.EtcdBackupWaitingReason, "PersistentVolumeClaim backups not found in namespace "+ns)
	if res.RequeueAfter != claimPoll {
		t.Fatalf("a backup waiting for its claim is requeued after %s, want %s", res.RequeueAfter, claimPoll)
	}

	controlPlane := newControlPlane(t, ns)
	etcdIP := etcdClientIP(t, controlPlane)
	newClaim(t, ns)
	reconcile()
	expectCondition(t, backup, metav1.ConditionFalse, hyperv1.EtcdBackupInProgressReason, "taking a snapshot of etcd")
	serve := getJob(t, controlPlane, JobName("nightly"))
	args := serve.Spec.Template.Spec.Containers[0].Args
	if !slices.Contains(args, "--etcd-endpoint=https://"+etcdIP+":2379") || !slices.Contains(args, "--etcd-server-name=etcd-client") {
		t.Fatalf("serve Job args %v: want etcd's client Service by its ClusterIP %s", args, etcdIP)
	}
	if image := serve.Spec.Template.Spec.Containers[0].Image; image != cpoImage {
		t.Fatalf("serve Job image %s, want the control-plane-operator's %s", image, cpoImage)
	}
	source := getSecret(t, controlPlane, TransferSecretName("nightly"))
	copied := getSecret(t, ns, TransferSecretName("nightly"))
	if len(source.Data[TransferKeyKey]) == 0 || len(source.Data[TransferTokenKey]) != 64 {
		t.Fatalf("the serving side's transfer Secret lacks its key or token: keys %v", keys(source.Data))
	}
	if _, ok := copied.Data[TransferKeyKey]; ok || string(copied.Data[TransferCertKey]) != string(source.Data[TransferCertKey]) ||
		string(copied.Data[TransferTokenKey]) != string(source.Data[TransferTokenKey]) {
		t.Fatalf("the receiving side's transfer Secret must hold the same certificate and token and no key: keys %v", keys(copied.Data))
	}

	// Not ready: the snapshot is being taken; no receiver yet.
	reconcile()
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: JobName("nightly")}, &batchv1.Job{}); !apierrors.IsNotFound(err) {
		t.Fatalf("receive Job before the serving pod is ready: %v", err)
	}
	servePod := jobPod(t, serve)
	runReady(t, servePod, "10.1.2.3")
	eventually(t, "the serve Job counts its pod ready", func() bool {
		serve = getJob(t, controlPlane, JobName("nightly"))
		return serve.Status.Ready != nil && *serve.Status.Ready == 1
	})
	reconcile()
	expectCondition(t, backup, metav1.ConditionFalse, hyperv1.EtcdBackupInProgressReason, "writing the snapshot to PersistentVolumeClaim backups")
	receive := getJob(t, ns, JobName("nightly"))
	if args := receive.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--url=https://10.1.2.3:8443/snapshot") || !slices.Contains(args, "--output=/backup/nightly.db") {
		t.Fatalf("receive Job args %v: want the serving pod's address and the backup's file", args)
	}
	if owner := metav1.GetControllerOf(receive); owner == nil || owner.UID != backup.UID {
		t.Fatalf("receive Job owner %+v: want the EtcdBackup", owner)
	}
	if claim := receive.Spec.Template.Spec.Volumes[1].PersistentVolumeClaim; claim == nil || claim.ClaimName != "backups" {
		t.Fatalf("receive Job volumes %+v: want claim backups", receive.Spec.Template.Spec.Volumes)
	}

	finish(t, jobPod(t, receive), 0, `{"revision":1234,"size":20480,"sha256":"`+strings.Repeat("ab", 32)+`","member":"etcd-0"}`)
	eventually(t, "the receive Job completes", func() bool { return jobSucceeded(getJob(t, ns, JobName("nightly"))) })
	reconcile()
	c := expectCondition(t, backup, metav1.ConditionTrue, hyperv1.EtcdBackupSucceededReason, "snapshot of revision 1234 (20480 bytes, taken from member etcd-0) written to nightly.db on PersistentVolumeClaim backups")
	s := backup.Status.Snapshot
	if s == nil || s.Revision != 1234 || s.SizeBytes != 20480 || s.SHA256 != strings.Repeat("ab", 32) || s.Member != "etcd-0" || s.FileName != "nightly.db" || s.CompletionTime.IsZero() {
		t.Fatalf("status.snapshot %+v", s)
	}
	if s.EncryptionConfigSecret != "nightly-encryption-config" {
		t.Fatalf("status.snapshot.encryptionConfigSecret %q", s.EncryptionConfigSecret)
	}
	if saved := getSecret(t, ns, s.EncryptionConfigSecret); string(saved.Data[encryptionConfigKey]) != encryptionConfig ||
		metav1.GetControllerOf(saved) == nil || metav1.GetControllerOf(saved).UID != backup.UID {
		t.Fatalf("the saved encryption configuration %q, owner %+v: want the control plane's, owned by the backup", saved.Data, metav1.GetControllerOf(saved))
	}
	if slices.Contains(backup.Finalizers, Finalizer) {
		t.Fatal("the finalizer stays after the backup completed")
	}
	expectGone(t, &batchv1.Job{}, controlPlane, JobName("nightly"))
	expectGone(t, &batchv1.Job{}, ns, JobName("nightly"))
	expectGone(t, &corev1.Secret{}, controlPlane, TransferSecretName("nightly"))
	expectGone(t, &corev1.Secret{}, ns, TransferSecretName("nightly"))

	rv := backup.ResourceVersion
	reconcile()
	if backup.ResourceVersion != rv || c.LastTransitionTime != meta.FindStatusCondition(backup.Status.Conditions, hyperv1.EtcdBackupCompleteCondition).LastTransitionTime {
		t.Fatal("a pass over a complete backup wrote to it")
	}
}

// TestEtcdBackupFailureIsFinal: a serving pod that fails says why in the
// Complete condition (BackupFailed), no receiver is made, and what was
// made is deleted.
func TestEtcdBackupFailureIsFinal(t *testing.T) {
	ns := env.Namespace(t)
	r := &Reconciler{Client: env.Client, APIReader: env.Client}
	setAvailable(t, newCluster(t, ns))
	controlPlane := newControlPlane(t, ns)
	newClaim(t, ns)
	backup := newBackup(t, ns, "broken")
	reconcile := reconciler(t, r, backup)
	reconcile()
	serve := getJob(t, controlPlane, JobName("broken"))
	finish(t, jobPod(t, serve), 1, "failed to take the snapshot from https://172.30.0.10:2379: context deadline exceeded")
	eventually(t, "the serve Job fails", func() bool { return JobFailed(getJob(t, controlPlane, JobName("broken"))) })
	reconcile()
	expectCondition(t, backup, metav1.ConditionFalse, hyperv1.EtcdBackupFailedReason,
		"taking the snapshot failed: failed to take the snapshot from https://172.30.0.10:2379: context deadline exceeded")
	if backup.Status.Snapshot != nil || slices.Contains(backup.Finalizers, Finalizer) {
		t.Fatalf("a failed backup has snapshot %+v, finalizers %v", backup.Status.Snapshot, backup.Finalizers)
	}
	expectGone(t, &batchv1.Job{}, controlPlane, JobName("broken"))
	expectGone(t, &batchv1.Job{}, ns, JobName("broken"))
	expectGone(t, &corev1.Secret{}, controlPlane, TransferSecretName("broken"))
	expectGone(t, &corev1.Secret{}, ns, "broken-encryption-config")
}

// TestEtcdBackupRefusesKeysThatChanged: when the kube-apiserver's
// encryption keys change between the snapshot and its report, the saved
// keys may not read the snapshot's Secrets: the backup fails and says so.
func TestEtcdBackupRefusesKeysThatChanged(t *testing.T) {
	ns := env.Namespace(t)
	r := &Reconciler{Client: env.Client, APIReader: env.Client}
	setAvailable(t, newCluster(t, ns))
	controlPlane := newControlPlane(t, ns)
	newClaim(t, ns)
	backup := newBackup(t, ns, "rotated")
	reconcile := reconciler(t, r, backup)
	reconcile()
	serve := getJob(t, controlPlane, JobName("rotated"))
	runReady(t, jobPod(t, serve), "10.1.2.4")
	eventually(t, "the serve Job counts its pod ready", func() bool {
		serve = getJob(t, controlPlane, JobName("rotated"))
		return serve.Status.Ready != nil && *serve.Status.Ready == 1
	})
	reconcile()
	config := getSecret(t, controlPlane, encryptionConfigSecret)
	config.Data[encryptionConfigKey] = []byte(encryptionConfig + "# a new key\n")
	if err := env.Client.Update(t.Context(), config); err != nil {
		t.Fatal(err)
	}
	finish(t, jobPod(t, getJob(t, ns, JobName("rotated"))), 0, `{"revision":7,"size":20480,"sha256":"`+strings.Repeat("cd", 32)+`","member":"etcd-0"}`)
	eventually(t, "the receive Job completes", func() bool { return jobSucceeded(getJob(t, ns, JobName("rotated"))) })
	reconcile()
	expectCondition(t, backup, metav1.ConditionFalse, hyperv1.EtcdBackupFailedReason, "the hosted kube-apiserver's encryption keys changed while the snapshot was taken")
	expectGone(t, &corev1.Secret{}, ns, "rotated-encryption-config")
}

// TestDeletedEtcdBackupLeavesNothingInTheControlPlane: deleting a backup
// in progress removes its Job and Secret from the control-plane
// namespace, which owner references cannot reach, before it goes.
func TestDeletedEtcdBackupLeavesNothingInTheControlPlane(t *testing.T) {
	ns := env.Namespace(t)
	r := &Reconciler{Client: env.Client, APIReader: env.Client}
	setAvailable(t, newCluster(t, ns))
	controlPlane := newControlPlane(t, ns)
	newClaim(t, ns)
	backup := newBackup(t, ns, "abandoned")
	reconcile := reconciler(t, r, backup)
	reconcile()
	getJob(t, controlPlane, JobName("abandoned"))
	if err := env.Client.Delete(t.Context(), backup); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(t.Context(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(backup)}); err != nil {
		t.Fatal(err)
	}
	expectGone(t, &hyperv1.EtcdBackup{}, ns, "abandoned")
	expectGone(t, &batchv1.Job{}, controlPlane, JobName("abandoned"))
	expectGone(t, &corev1.Secret{}, controlPlane, TransferSecretName("abandoned"))
}

const encryptionConfig = "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\n"

const cpoImage = "registry.example.com/hypershift@sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func reconciler(t *testing.T, r *Reconciler, backup *hyperv1.EtcdBackup) func() ctrl.Result {
	return func() ctrl.Result {
		t.Helper()
		res, err := r.Reconcile(t.Context(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(backup)})
		if err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(backup), backup); err != nil {
			t.Fatal(err)
		}
		return res
	}
}

func newBackup(t *testing.T, ns, name string) *hyperv1.EtcdBackup {
	t.Helper()
	b := &hyperv1.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: hyperv1.EtcdBackupSpec{
			ClusterName: "demo",
			Storage:     hyperv1.EtcdBackupStorage{PersistentVolumeClaim: hyperv1.EtcdBackupVolumeClaim{ClaimName: "backups"}},
		},
	}
	if err := env.Client.Create(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	return b
}

func newCluster(t *testing.T, ns string) *hyperv1.HostedCluster {
	t.Helper()
	hc := &hyperv1.HostedCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "demo"},
		Spec: hyperv1.HostedClusterSpec{
			Release:    hyperv1.Release{Image: "quay.io/openshift-release-dev/ocp-release:4.17.0-x86_64"},
			Platform:   hyperv1.PlatformSpec{Type: hyperv1.NonePlatform},
			PullSecret: hyperv1.LocalObjectReference{Name: "pull-secret"},
			Services:   hyperv1.NodePortServices("198.18.0.11", 0),
		},
	}
	if err := env.Client.Create(t.Context(), hc); err != nil {
		t.Fatal(err)
	}
	return hc
}

func setAvailable(t *testing.T, hc *hyperv1.HostedCluster) {
	t.Helper()
	conditions.Set(&hc.Status.Conditions, hc.Generation, hyperv1.Available, metav1.ConditionTrue, "AsExpected", "the hosted control plane is available")
	if err := env.Client.Status().Update(t.Context(), hc); err != nil {
		t.Fatal(err)
	}
}

// newControlPlane makes the control-plane namespace with what the
// backup reads there: the control-plane-operator Deployment (its image)
// and etcd's client Service (its ClusterIP).
func newControlPlane(t *testing.T, ns string) string {
	t.Helper()
	name := hyperv1.ControlPlaneNamespace(ns, "demo")
	if err := env.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.Delete(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	})
	labels := map[string]string{"app": hyperv1.ControlPlaneOperatorName}
	if err := env.Client.Create(t.Context(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: hyperv1.ControlPlaneOperatorName},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ImagePullSecrets: []corev1.LocalObjectReference{{Name: "pull-secret"}},
					Containers:       []corev1.Container{{Name: hyperv1.ControlPlaneOperatorName, Image: cpoImage}},
				},
			},
		},
	}); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: encryptionConfigSecret},
		Data:       map[string][]byte{encryptionConfigKey: []byte(encryptionConfig)},
	}); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(t.Context(), &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: etcdClientService},
		Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": "etcd"}, Ports: []corev1.ServicePort{{Name: "client", Port: etcdClientPort}}},
	}); err != nil {
		t.Fatal(err)
	}
	return name
}

func etcdClientIP(t *testing.T, controlPlane string) string {
	t.Helper()
	svc := &corev1.Service{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: controlPlane, Name: etcdClientService}, svc); err != nil {
		t.Fatal(err)
	}
	return svc.Spec.ClusterIP
}

func newClaim(t *testing.T, ns string) {
	t.Helper()
	if err := env.Client.Create(t.Context(), &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "backups"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}); err != nil {
		t.Fatal(err)
	}
}

func getJob(t *testing.T, ns, name string) *batchv1.Job {
	t.Helper()
	job := &batchv1.Job{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, job); err != nil {
		t.Fatalf("Job %s/%s: %v", ns, name, err)
	}
	return job
}

func getSecret(t *testing.T, ns, name string) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
		t.Fatalf("Secret %s/%s: %v", ns, name, err)
	}
	return s
}

// jobPod waits for the Job controller to make the Job's pod.
func jobPod(t *testing.T, job *batchv1.Job) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	eventually(t, "Job "+job.Name+" has a pod", func() bool {
		pods := &corev1.PodList{}
		if err := env.Client.List(t.Context(), pods, client.InNamespace(job.Namespace), client.MatchingLabels{batchv1.JobNameLabel: job.Name}); err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) == 0 {
			return false
		}
		pod = &pods.Items[0]
		return true
	})
	return pod
}

// runReady sets the pod running and ready at ip, as its kubelet would.
func runReady(t *testing.T, pod *corev1.Pod, ip string) {
	t.Helper()
	now := metav1.Now()
	pod.Status = corev1.PodStatus{
		Phase:     corev1.PodRunning,
		PodIP:     ip,
		PodIPs:    []corev1.PodIP{{IP: ip}},
		StartTime: &now,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
		},
		ContainerStatuses: []corev1.ContainerStatus{{
			Name: containerCPO, Ready: true, Image: cpoImage, ImageID: cpoImage,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		}},
	}
	if err := env.Client.Status().Update(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
}

// finish ends the pod's container with code and message, as its kubelet
// would.
func finish(t *testing.T, pod *corev1.Pod, code int32, message string) {
	t.Helper()
	now := metav1.Now()
	phase := corev1.PodSucceeded
	if code != 0 {
		phase = corev1.PodFailed
	}
	pod.Status = corev1.PodStatus{
		Phase:     phase,
		StartTime: &now,
		ContainerStatuses: []corev1.ContainerStatus{{
			Name: containerCPO, Image: cpoImage, ImageID: cpoImage,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Message: message, StartedAt: now, FinishedAt: now}},
		}},
	}
	if err := env.Client.Status().Update(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
}

func expectCondition(t *testing.T, b *hyperv1.EtcdBackup, status metav1.ConditionStatus, reason, message string) metav1.Condition {
	t.Helper()
	c := meta.FindStatusCondition(b.Status.Conditions, hyperv1.EtcdBackupCompleteCondition)
	if c == nil || c.Status != status || c.Reason != reason || !strings.Contains(c.Message, message) {
		t.Fatalf("Complete %+v: want %s, %s, a message with %q", c, status, reason, message)
	}
	return *c
}

// expectGone: the object is deleted or being deleted (the garbage
// collector removes a Job's pods first).
func expectGone(t *testing.T, obj client.Object, ns, name string) {
	t.Helper()
	err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, obj)
	if err == nil && obj.GetDeletionTimestamp().IsZero() {
		t.Fatalf("%T %s/%s is still there", obj, ns, name)
	}
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
}

func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	testutil.Eventually(t, 30*time.Second, func() error {
		if !ok() {
			return errors.New("not yet: " + what)
		}
		return nil
	})
}

func keys(m map[string][]byte) []string { return slices.Sorted(maps.Keys(m)) }

// TestEtcdBackupOfAnotherShardIsANoOp: a request the shard queue let in
// while the EtcdBackup was not in the cache (its shard unknown) is left
// alone once read, when its cluster belongs to another shard.
func TestEtcdBackupOfAnotherShardIsANoOp(t *testing.T) {
	ns := env.Namespace(t)
	backup := newBackup(t, ns, "elsewhere")
	shard := leaderelection.ShardOf(hyperv1.HostedClusterShardKey(ns, backup.Spec.ClusterName), 2)
	r := &Reconciler{Client: env.Client, APIReader: env.Client, Shard: leaderelection.Shard{Index: 1 - shard, Count: 2}}
	reconciler(t, r, backup)()
	if len(backup.Finalizers) != 0 {
		t.Errorf("shard %d's controller wrote EtcdBackup %s/%s, of shard %d: finalizers %v", 1-shard, ns, backup.Name, shard, backup.Finalizers)
	}
}
