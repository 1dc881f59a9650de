// Command local-path-provisioner provisions the local cluster's volumes: one
// runs on each node (a DaemonSet), and speaks the external provisioner
// protocol with kube-controller-manager's PersistentVolume controller. The
// StorageClass binds when a pod is scheduled (WaitForFirstConsumer), so a
// claim comes with the node its first pod runs on; the provisioner of that
// node makes a directory under its --dir and a `local` PersistentVolume
// pre-bound to the claim, pinned to the node. For a released volume of its
// node whose policy says Delete, it removes the directory, then the
// volume. kind's local-path-provisioner does the same with a helper pod
// and a shell; the images here hold no shell.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// The annotations of the external provisioning protocol: the
// PersistentVolume controller names a claim's provisioner, the scheduler
// its node, and a provisioned volume names who made it.
const (
	annStorageProvisioner = "volume.kubernetes.io/storage-provisioner"
	annSelectedNode       = "volume.kubernetes.io/selected-node"
	annProvisionedBy      = "pv.kubernetes.io/provisioned-by"
)

func main() {
	name := flag.String("provisioner-name", "", "The provisioner this program is, as StorageClasses name it.")
	node := flag.String("node-name", os.Getenv("NODE_NAME"), "The node this provisioner runs on (default $NODE_NAME).")
	dir := flag.String("dir", "/var/lib/local-path", "Where the volumes' directories are made, as this container sees it.")
	hostDir := flag.String("host-dir", "", "The same directory as the node sees it, for the volumes' paths (default --dir).")
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	if *name == "" || *node == "" {
		fmt.Fprintln(os.Stderr, "error: --provisioner-name and --node-name (or $NODE_NAME) are required")
		os.Exit(2)
	}
	p := &provisioner{name: *name, node: *node, dir: *dir, hostDir: *hostDir}
	if p.hostDir == "" {
		p.hostDir = p.dir
	}
	if err := run(ctrl.SetupSignalHandler(), p); err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, p *provisioner) error {
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		return err
	}
	p.client = mgr.GetClient()
	if err := ctrl.NewControllerManagedBy(mgr).Named("claims").For(&corev1.PersistentVolumeClaim{}).
		Complete(reconcilerFunc(p.syncClaim)); err != nil {
		return err
	}
	if err := ctrl.NewControllerManagedBy(mgr).Named("volumes").For(&corev1.PersistentVolume{}).
		Complete(reconcilerFunc(p.syncVolume)); err != nil {
		return err
	}
	return mgr.Start(ctx)
}

type reconcilerFunc func(context.Context, ctrl.Request) error

func (f reconcilerFunc) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return ctrl.Result{}, f(ctx, req)
}

type provisioner struct {
	name, node, dir, hostDir string
	client                   client.Client
}

// volumeName is the PersistentVolume of a claim, named as the external
// provisioners name theirs.
func volumeName(claim *corev1.PersistentVolumeClaim) string {
	return "pvc-" + string(claim.UID)
}

// syncClaim provisions a volume for a claim handed to this provisioner on
// this node that has none yet.
func (p *provisioner) syncClaim(ctx context.Context, req ctrl.Request) error {
	claim := &corev1.PersistentVolumeClaim{}
	if err := p.client.Get(ctx, req.NamespacedName, claim); err != nil {
		return client.IgnoreNotFound(err)
	}
	if claim.Spec.VolumeName != "" || claim.DeletionTimestamp != nil ||
		claim.Annotations[annStorageProvisioner] != p.name || claim.Annotations[annSelectedNode] != p.node {
		return nil
	}
	name := volumeName(claim)
	if err := p.client.Get(ctx, client.ObjectKey{Name: name}, &corev1.PersistentVolume{}); !apierrors.IsNotFound(err) {
		return err // made already, or unknown
	}
	dir := filepath.Join(p.dir, name)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return fmt.Errorf("failed to create the directory of %s: %w", name, err)
	}
	// MkdirAll's mode passes through the umask; a volume is for any user.
	if err := os.Chmod(dir, 0o777); err != nil {
		return fmt.Errorf("failed to set the mode of %s: %w", dir, err)
	}
	if err := p.client.Create(ctx, p.volumeFor(claim, name)); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("failed to create %s: %w", name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Provisioned a volume", "volume", name, "path", dir)
	return nil
}

// volumeFor is the PersistentVolume of a claim: a local directory of this
// node with the claim's size and access modes, pre-bound to it.
func (p *provisioner) volumeFor(claim *corev1.PersistentVolumeClaim, name string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{annProvisionedBy: p.name}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: claim.Spec.Resources.Requests[corev1.ResourceStorage]},
			AccessModes:                   claim.Spec.AccessModes,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			StorageClassName:              ptr.Deref(claim.Spec.StorageClassName, ""),
			VolumeMode:                    claim.Spec.VolumeMode,
			ClaimRef: &corev1.ObjectReference{
				Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID,
			},
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				Local: &corev1.LocalVolumeSource{Path: filepath.Join(p.hostDir, name)},
			},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{p.node}}},
			}}}},
		},
	}
}

// syncVolume deletes a released volume of this provisioner on this node
// whose policy says Delete: first its directory, then the object.
func (p *provisioner) syncVolume(ctx context.Context, req ctrl.Request) error {
	pv := &corev1.PersistentVolume{}
	if err := p.client.Get(ctx, req.NamespacedName, pv); err != nil {
		return client.IgnoreNotFound(err)
	}
	if pv.Annotations[annProvisionedBy] != p.name || pv.Status.Phase != corev1.VolumeReleased ||
		pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete || pv.Spec.Local == nil ||
		filepath.Dir(pv.Spec.Local.Path) != p.hostDir {
		return nil
	}
	if pinnedTo(pv) != p.node {
		return nil // another node's
	}
	dir := filepath.Join(p.dir, filepath.Base(pv.Spec.Local.Path))
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("failed to remove %s: %w", dir, err)
	}
	err := p.client.Delete(ctx, pv, client.Preconditions{UID: &pv.UID})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("failed to delete %s: %w", pv.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Deleted a released volume", "volume", pv.Name)
	return nil
}

// pinnedTo is the node a volume made by volumeFor is pinned to.
func pinnedTo(pv *corev1.PersistentVolume) string {
	affinity := pv.Spec.NodeAffinity
	if affinity == nil || affinity.Required == nil || len(affinity.Required.NodeSelectorTerms) != 1 {
		return ""
	}
	terms := affinity.Required.NodeSelectorTerms[0].MatchExpressions
	if len(terms) != 1 || terms[0].Key != corev1.LabelHostname || len(terms[0].Values) != 1 {
		return ""
	}
	return terms[0].Values[0]
}
