package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
)

const (
	// LocalPathStorageClass is the default StorageClass the agent
	// provisions when Config.ProvisionVolumes is set.
	LocalPathStorageClass = "local-path"
	// LocalPathProvisioner is its provisioner's name.
	LocalPathProvisioner = "nodeagent.local/local-path"

	// The annotations of the external provisioning protocol: the
	// PersistentVolume controller names a claim's provisioner, and a
	// provisioned volume names who made it.
	annStorageProvisioner = "volume.kubernetes.io/storage-provisioner"
	annProvisionedBy      = "pv.kubernetes.io/provisioned-by"
)

// provisioner is a local-path provisioner, speaking the external
// provisioner protocol with kube-controller-manager's PersistentVolume
// controller: for a claim that controller hands to LocalPathProvisioner it
// creates a directory and a hostPath PersistentVolume pre-bound to the
// claim (the controller then binds the claim); for a released volume of
// its own with reclaim policy Delete it removes the directory and the
// volume.
type provisioner struct {
	agent *Agent
	queue workqueue.TypedRateLimitingInterface[string]
}

// Queue keys: "claim/<namespace>/<name>" and "volume/<name>".
const (
	claimKey  = "claim/"
	volumeKey = "volume/"
)

func (a *Agent) startProvisioner(ctx context.Context, factory informers.SharedInformerFactory) error {
	if err := a.ensureStorageClass(ctx); err != nil {
		return err
	}
	p := &provisioner{agent: a, queue: workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](200*time.Millisecond, 30*time.Second),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "nodeagent-provisioner"},
	)}
	enqueue := func(obj any) {
		switch o := unwrap(obj).(type) {
		case *corev1.PersistentVolumeClaim:
			p.queue.Add(claimKey + o.Namespace + "/" + o.Name)
		case *corev1.PersistentVolume:
			p.queue.Add(volumeKey + o.Name)
		}
	}
	for _, informer := range []cache.SharedIndexInformer{
		factory.Core().V1().PersistentVolumeClaims().Informer(), factory.Core().V1().PersistentVolumes().Informer(),
	} {
		if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) }, DeleteFunc: enqueue,
		}); err != nil {
			return fmt.Errorf("nodeagent: failed to watch claims: %w", err)
		}
	}
	a.goRun(func() {
		<-ctx.Done()
		p.queue.ShutDown()
	})
	a.goRun(func() {
		for p.next(ctx) {
		}
	})
	return nil
}

// ensureStorageClass creates the default local-path StorageClass unless it
// exists.
func (a *Agent) ensureStorageClass(ctx context.Context) error {
	class := &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{
			Name:        LocalPathStorageClass,
			Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"},
		},
		Provisioner:       LocalPathProvisioner,
		ReclaimPolicy:     ptr.To(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate),
	}
	_, err := a.client.StorageV1().StorageClasses().Create(ctx, class, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("nodeagent: failed to create StorageClass %s: %w", LocalPathStorageClass, err)
	}
	return nil
}

func (p *provisioner) next(ctx context.Context) bool {
	key, quit := p.queue.Get()
	if quit {
		return false
	}
	defer p.queue.Done(key)
	var err error
	if rest, ok := strings.CutPrefix(key, claimKey); ok {
		namespace, name, _ := strings.Cut(rest, "/")
		err = p.syncClaim(ctx, types.NamespacedName{Namespace: namespace, Name: name})
	} else if name, ok := strings.CutPrefix(key, volumeKey); ok {
		err = p.syncVolume(ctx, name)
	}
	if err != nil && ctx.Err() == nil {
		p.agent.log.Error(err, "Failed to provision", "key", key)
		p.queue.AddRateLimited(key)
		return true
	}
	p.queue.Forget(key)
	return true
}

// volumeName is the PersistentVolume of a claim, named as the external
// provisioners name theirs.
func volumeName(claim *corev1.PersistentVolumeClaim) string {
	return "pvc-" + string(claim.UID)
}

// syncClaim provisions a volume for a claim handed to this provisioner
// that has none yet.
func (p *provisioner) syncClaim(ctx context.Context, key types.NamespacedName) error {
	claim, err := p.agent.claims.PersistentVolumeClaims(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if claim.Spec.VolumeName != "" || claim.DeletionTimestamp != nil || claim.Annotations[annStorageProvisioner] != LocalPathProvisioner {
		return nil
	}
	name := volumeName(claim)
	if _, err := p.agent.volumes.Get(name); err == nil {
		return nil
	}
	dir := filepath.Join(p.agent.pvDir, name)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return fmt.Errorf("failed to create the directory of %s: %w", name, err)
	}
	// MkdirAll's mode passes through the umask; a volume is for any user.
	if err := os.Chmod(dir, 0o777); err != nil {
		return fmt.Errorf("failed to set the mode of %s: %w", dir, err)
	}
	pv := p.volumeFor(claim, name, dir)
	_, err = p.agent.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("failed to create %s: %w", name, err)
	}
	p.agent.log.Info("Provisioned a volume", "claim", key, "volume", name, "path", dir)
	return nil
}

// volumeFor is the PersistentVolume of a claim: a hostPath directory with
// the claim's size and access modes, pre-bound to it.
func (p *provisioner) volumeFor(claim *corev1.PersistentVolumeClaim, name, dir string) *corev1.PersistentVolume {
	capacity := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{annProvisionedBy: LocalPathProvisioner}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: capacity},
			AccessModes:                   claim.Spec.AccessModes,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			StorageClassName:              ptr.Deref(claim.Spec.StorageClassName, LocalPathStorageClass),
			VolumeMode:                    claim.Spec.VolumeMode,
			ClaimRef: &corev1.ObjectReference{
				Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID,
			},
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: ptr.To(corev1.HostPathDirectory)},
			},
		},
	}
}

// syncVolume deletes a released volume of this provisioner whose policy
// says Delete: first its directory, then the object.
func (p *provisioner) syncVolume(ctx context.Context, name string) error {
	pv, err := p.agent.volumes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if pv.Annotations[annProvisionedBy] != LocalPathProvisioner || pv.Status.Phase != corev1.VolumeReleased ||
		pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete || pv.Spec.HostPath == nil {
		return nil
	}
	dir := pv.Spec.HostPath.Path
	if filepath.Dir(dir) != p.agent.pvDir {
		return errors.New("refusing to delete " + dir + ": not a directory this agent provisioned")
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("failed to remove %s: %w", dir, err)
	}
	uid := pv.UID
	err = p.agent.client.CoreV1().PersistentVolumes().Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("failed to delete %s: %w", name, err)
	}
	p.agent.log.Info("Deleted a released volume", "volume", name)
	return nil
}
