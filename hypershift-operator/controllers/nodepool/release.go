package nodepool

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/version"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/releaseinfo"
)

// MaxMinorSkew is how many minor versions a NodePool may be older than its
// HostedCluster, as HyperShift allows (N-3); never newer.
const MaxMinorSkew = 3

// Reasons of SupportedVersionSkew=False and Unknown, and of
// ValidReleaseImage=False for a pool of platform Pod: hyperv1's, kept here
// for those that name them from this package.
const (
	NodePoolNewerReason     = hyperv1.NodePoolNewerReason
	NodePoolTooOldReason    = hyperv1.NodePoolTooOldReason
	ClusterVersionUnknown   = hyperv1.ClusterVersionUnknownReason
	UnparsableVersionReason = hyperv1.UnparsableVersionReason
	NoMachineImageReason    = hyperv1.NoMachineImageReason
)

// releaseCheck is what the pool's release says of it.
type releaseCheck struct {
	// version is the pool's release version; "" when it cannot be read.
	version string
	// images are the payload's images machines of platform Pod run, by
	// tag (MachineImageTag, SandboxImageTag); a tag the payload lacks is
	// missing.
	images map[string]string
	// valid is false when the release cannot be read, or its version is
	// one the cluster does not support: the pool is then not Ready.
	valid bool
}

// The release payload's images of a machine of platform Pod, by tag.
const (
	// MachineImageTag is the machine image: containerd, runc, the kubelet.
	MachineImageTag = "machine"
	// SandboxImageTag is the pause image of its pod sandboxes.
	SandboxImageTag = "pod"
)

// ReleaseRecheck is how long a pool's release, once read, is taken as
// read: the passes in between (every few seconds while nodes join) make no
// request to the registry and read no pull secret. A new spec.release.image
// is read at once.
const ReleaseRecheck = 10 * time.Minute

// releaseVerdict is the version of the release image last read for a
// pool, and when.
type releaseVerdict struct {
	image, version string
	images         map[string]string
	at             time.Time
}

// fresh reports whether v still stands for image at now.
func (v releaseVerdict) fresh(image string, now time.Time) bool {
	return v.image == image && now.Sub(v.at) < ReleaseRecheck && !now.Before(v.at)
}

// checkRelease reads the pool's release payload with the HostedCluster's
// pull secret (at most once per ReleaseRecheck for the same image) and sets
// ValidReleaseImage and SupportedVersionSkew.
func (r *Reconciler) checkRelease(ctx context.Context, np *hyperv1.NodePool, hc *hyperv1.HostedCluster, set func(string, metav1.ConditionStatus, string, string)) (releaseCheck, error) {
	pool := types.NamespacedName{Namespace: np.Namespace, Name: np.Name}
	if v, ok := r.verdicts.load(pool); ok && v.fresh(np.Spec.Release.Image, r.now()) {
		return r.judgeSkew(np, hc, v.version, v.images, set), nil
	}
	secret := &corev1.Secret{}
	key := client.ObjectKey{Namespace: hc.Namespace, Name: hc.Spec.PullSecret.Name}
	if err := r.APIReader.Get(ctx, key, secret); err != nil {
		message := fmt.Sprintf("The HostedCluster's pull secret %s cannot be read to check the pool's release: %v", key, err)
		set(hyperv1.ValidReleaseImage, metav1.ConditionUnknown, hyperv1.ReleaseImageUnavailableReason, message)
		return releaseCheck{}, client.IgnoreNotFound(err)
	}
	release, err := r.Releases.Lookup(ctx, np.Spec.Release.Image, secret.Data[corev1.DockerConfigJsonKey])
	if err != nil {
		set(hyperv1.ValidReleaseImage, metav1.ConditionFalse, releaseinfo.Reason(err), fmt.Sprintf("Failed to read release image %s: %v", np.Spec.Release.Image, err))
		return releaseCheck{}, nil // a new spec, or the cluster's next change, starts the next pass
	}
	// Only a payload that was read is remembered: a failure is read again
	// on the next pass, once the user fixed the registry or the secret.
	images := map[string]string{}
	for _, tag := range []string{MachineImageTag, SandboxImageTag} {
		if image, ok := release.ComponentImage(tag); ok {
			images[tag] = image
		}
	}
	r.verdicts.store(pool, releaseVerdict{image: np.Spec.Release.Image, version: release.Version, images: images, at: r.now()})
	return r.judgeSkew(np, hc, release.Version, images, set), nil
}

// judgeSkew sets ValidReleaseImage and SupportedVersionSkew for a pool
// whose release is version.
func (r *Reconciler) judgeSkew(np *hyperv1.NodePool, hc *hyperv1.HostedCluster, version string, images map[string]string, set func(string, metav1.ConditionStatus, string, string)) releaseCheck {
	if np.Spec.Platform.Type == hyperv1.PodPlatform {
		for _, tag := range []string{MachineImageTag, SandboxImageTag} {
			if images[tag] == "" {
				set(hyperv1.ValidReleaseImage, metav1.ConditionFalse, hyperv1.NoMachineImageReason,
					fmt.Sprintf("Release image %s (version %s) names no %s image, which machines of platform Pod run", np.Spec.Release.Image, version, tag))
				return releaseCheck{version: version}
			}
		}
	}
	set(hyperv1.ValidReleaseImage, metav1.ConditionTrue, hyperv1.AsExpectedReason, fmt.Sprintf("Release image %s is version %s", np.Spec.Release.Image, version))
	status, reason, message := skew(version, hc.Status.Version)
	set(hyperv1.SupportedVersionSkew, status, reason, message)
	return releaseCheck{version: version, images: images, valid: status != metav1.ConditionFalse}
}

// skew judges a pool of version pool against its cluster: it may run the
// cluster's version or one up to MaxMinorSkew minors older, never a newer
// one (its kubelets would be newer than the kube-apiserver).
func skew(pool string, cluster *hyperv1.ClusterVersionStatus) (metav1.ConditionStatus, string, string) {
	if cluster == nil || cluster.Desired.Version == "" {
		return metav1.ConditionUnknown, hyperv1.ClusterVersionUnknownReason, "The HostedCluster reports no version yet"
	}
	p, err := version.ParseGeneric(pool)
	if err != nil {
		return metav1.ConditionFalse, hyperv1.UnparsableVersionReason, fmt.Sprintf("The pool's release version %q is no version: %v", pool, err)
	}
	c, err := version.ParseGeneric(cluster.Desired.Version)
	if err != nil {
		return metav1.ConditionUnknown, hyperv1.UnparsableVersionReason, fmt.Sprintf("The HostedCluster's version %q is no version: %v", cluster.Desired.Version, err)
	}
	switch {
	case p.GreaterThan(c):
		return metav1.ConditionFalse, hyperv1.NodePoolNewerReason, fmt.Sprintf("NodePool version %s is newer than HostedCluster version %s: upgrade the cluster first, or give the pool release %s or one up to %d minor versions older",
			pool, cluster.Desired.Version, cluster.Desired.Version, MaxMinorSkew)
	case p.Major() != c.Major() || c.Minor()-p.Minor() > MaxMinorSkew:
		return metav1.ConditionFalse, hyperv1.NodePoolTooOldReason, fmt.Sprintf("NodePool version %s is more than %d minor versions older than HostedCluster version %s: upgrade the pool",
			pool, MaxMinorSkew, cluster.Desired.Version)
	}
	return metav1.ConditionTrue, hyperv1.AsExpectedReason, fmt.Sprintf("NodePool version %s is supported by HostedCluster version %s", pool, cluster.Desired.Version)
}
