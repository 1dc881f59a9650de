package hostedcluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/conditions"
	"github.com/hypershift-le/hypershift/support/releaseinfo"
)

// DefaultReleaseRecheckInterval is how often, unless ReleaseRecheckInterval
// says otherwise, the HO asks the registry again which payload the tag of a
// HostedCluster's spec.release.image names, to notice a tag that moved.
const DefaultReleaseRecheckInterval = 10 * time.Minute

// ReleaseImagePinnedReason is the reason of the Normal event the HO records
// when it pins a HostedCluster to a payload.
const ReleaseImagePinnedReason = "ReleaseImagePinned"

// reconcileRelease reads the pull secret and the release payload, and pins
// the payload the control plane runs (pinRelease). A failure sets
// ValidConfiguration or ValidReleaseImage and stops the pass before
// anything is applied: what already runs keeps running. A missing pull
// secret, a release tag that does not exist, credentials the registry
// refuses and a payload that is not a release wait on the user (waiting).
func (r *Reconciler) reconcileRelease(ctx context.Context, s *scope) (ctrl.Result, error) {
	hc := s.hc
	pullSecret, err := r.pullSecret(ctx, hc)
	if err != nil {
		return ctrl.Result{}, r.block(ctx, s, hyperv1.ValidConfiguration, hyperv1.PullSecretUnavailableReason, err.Error(), err)
	}
	// What the spec names now: on a tag, one HEAD request; the payload
	// itself is read once per digest.
	current, err := r.Releases.Lookup(ctx, hc.Spec.Release.Image, pullSecret)
	if err != nil {
		return ctrl.Result{}, r.blockRelease(ctx, s, err)
	}
	pin := pinRelease(hc, current.Digest)
	release := current
	if pin.moved {
		if release, err = r.Releases.Lookup(ctx, pin.image, pullSecret); err != nil {
			return ctrl.Result{}, r.blockRelease(ctx, s, fmt.Errorf("%w; the tag now names %s: %s", err, current.Digest, acceptHint(hc, current.Digest)))
		}
	}
	conditions.Set(&hc.Status.Conditions, hc.Generation, hyperv1.ValidReleaseImage, metav1.ConditionTrue, hyperv1.AsExpectedReason, "Release image "+hc.Spec.Release.Image+" is valid: version "+release.Version)
	r.setTagMoved(ctx, s, pin, current.Digest)
	s.release = release
	s.releaseImage = pin.image
	s.pullSecret = pullSecret
	if err := r.recordPin(ctx, s, pin.image, release.Version); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, nil
}

// pinned is the payload a HostedCluster's control plane is to run.
type pinned struct {
	// image is its pull spec, pinned by digest.
	image string
	// moved is set when the spec's tag names another payload now, which
	// the user has not accepted: image is the payload pinned before.
	moved bool
}

// pinRelease decides which payload the control plane runs, given the digest
// the spec's pull spec names now. The policy: a spec the HO has not pinned
// yet (a new cluster, a changed spec.release.image) is pinned to that
// digest; a spec pinned before keeps its pin (status.version.desired.image,
// recorded with status.version.requestedImage) even when its tag has moved,
// until the user accepts the new digest with AcceptReleaseDigestAnnotation.
// A spec that names a digest is its own pin.
func pinRelease(hc *hyperv1.HostedCluster, digest string) pinned {
	spec := hc.Spec.Release.Image
	fresh := pinned{image: releaseinfo.PinnedPullSpec(spec, digest)}
	version := hc.Status.Version
	switch {
	case releaseinfo.HasDigest(spec), version == nil, version.RequestedImage != spec, version.Desired.Image == "":
		return fresh
	case version.Desired.Image == fresh.image, hc.Annotations[hyperv1.AcceptReleaseDigestAnnotation] == digest:
		return fresh
	}
	return pinned{image: version.Desired.Image, moved: true}
}

// recordPin records the payload the control plane is pinned to and the
// spec it was pinned from, and writes a new pin to the status at once,
// before anything is applied with it: a pin only the HostedControlPlane
// knew would be lost to a status write that fails at the end of the pass
// (a conflict with a user's edit), and the next pass would pin the tag
// again, to whatever it names by then. A new pin is reported with a
// Normal event once the status shows it.
func (r *Reconciler) recordPin(ctx context.Context, s *scope, image, version string) error {
	if s.hc.Status.Version == nil {
		s.hc.Status.Version = &hyperv1.ClusterVersionStatus{}
	}
	v := s.hc.Status.Version
	v.Desired.Image, v.Desired.Version, v.RequestedImage = image, version, s.hc.Spec.Release.Image
	if before := s.original.Status.Version; before != nil && before.Desired.Image == image && before.RequestedImage == v.RequestedImage {
		return nil
	}
	newImage := s.original.Status.Version == nil || s.original.Status.Version.Desired.Image != image
	if newImage {
		// The status written now must not say more than is true now: the
		// new payload is what the cluster rolls out to, and nothing runs it
		// yet.
		r.setVersion(s, nil, nil, nil)
	}
	if err := r.Client.Status().Update(ctx, s.hc); err != nil {
		return fmt.Errorf("failed to record the release pin %s in the status (nothing was applied with it): %w", image, err)
	}
	s.written = s.hc.Status.DeepCopy()
	if !newImage {
		return nil
	}
	spec := s.hc.Spec.Release.Image
	r.reportOnce(s, ReleaseImagePinnedReason, image, func() {
		r.Recorder.Eventf(s.hc, nil, corev1.EventTypeNormal, ReleaseImagePinnedReason, "Pin",
			"Release image %s is pinned to %s (version %s): the control plane runs that payload until spec.release.image changes or a new digest is accepted", spec, image, version)
	})
	return nil
}

// setTagMoved sets ReleaseImageTagMoved, True while the spec's tag names
// another payload than the pinned one, with one Warning event per move.
func (r *Reconciler) setTagMoved(ctx context.Context, s *scope, pin pinned, digest string) {
	hc := s.hc
	spec := hc.Spec.Release.Image
	switch {
	case pin.moved:
		conditions.Set(&hc.Status.Conditions, hc.Generation, hyperv1.ReleaseImageTagMoved, metav1.ConditionTrue, hyperv1.ReleaseImageTagMoved,
			fmt.Sprintf("Release image %s now names payload %s, not the pinned %s: the control plane keeps running %s; %s",
				spec, digest, releaseinfo.DigestOf(pin.image), pin.image, acceptHint(hc, digest)))
		r.reportCondition(ctx, s, hyperv1.ReleaseImageTagMoved, metav1.ConditionTrue)
	case releaseinfo.HasDigest(spec):
		conditions.Set(&hc.Status.Conditions, hc.Generation, hyperv1.ReleaseImageTagMoved, metav1.ConditionFalse, hyperv1.PinnedBySpecReason,
			"Release image "+spec+" names a digest: it cannot move")
	default:
		conditions.Set(&hc.Status.Conditions, hc.Generation, hyperv1.ReleaseImageTagMoved, metav1.ConditionFalse, hyperv1.AsExpectedReason,
			"Release image "+spec+" names the pinned payload "+digest)
	}
}

// acceptHint says how to roll out the payload the tag names now.
func acceptHint(hc *hyperv1.HostedCluster, digest string) string {
	return fmt.Sprintf("to roll it out, annotate the HostedCluster with %s=%s (hypershift update cluster %s -n %s --accept-release-digest=%s), or set spec.release.image to another pull spec",
		hyperv1.AcceptReleaseDigestAnnotation, digest, hc.Name, hc.Namespace, digest)
}

// blockRelease stops the pass on a payload that cannot be read.
func (r *Reconciler) blockRelease(ctx context.Context, s *scope, err error) error {
	reason := releaseinfo.Reason(err)
	switch reason {
	case hyperv1.ReleaseImageNotFoundReason, hyperv1.ReleaseImageUnauthorizedReason, hyperv1.ReleaseImageMalformedReason:
		err = &waiting{err: err}
	}
	// The error names the image already: one sentence, no repeated
	// prefix.
	return r.block(ctx, s, hyperv1.ValidReleaseImage, reason, upperFirst(err.Error()), err)
}

// releaseRecheck is when to look at a tag again: a spec that names a digest
// cannot move, and is never rechecked.
func (r *Reconciler) releaseRecheck(s *scope) ctrl.Result {
	if s.release == nil || releaseinfo.HasDigest(s.hc.Spec.Release.Image) {
		return ctrl.Result{}
	}
	if r.ReleaseRecheckInterval > 0 {
		return ctrl.Result{RequeueAfter: r.ReleaseRecheckInterval}
	}
	return ctrl.Result{RequeueAfter: DefaultReleaseRecheckInterval}
}

// pullSecret returns the .dockerconfigjson of the HostedCluster's pull
// secret, read past the cache: the HO does not cache every Secret.
func (r *Reconciler) pullSecret(ctx context.Context, hc *hyperv1.HostedCluster) ([]byte, error) {
	secret := &corev1.Secret{}
	key := client.ObjectKey{Namespace: hc.Namespace, Name: hc.Spec.PullSecret.Name}
	if err := r.APIReader.Get(ctx, key, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &waiting{err: fmt.Errorf("pull secret %s not found: create it with your registry credentials under the %s key", key, corev1.DockerConfigJsonKey)}
		}
		return nil, fmt.Errorf("failed to get pull secret %s: %w", key, err)
	}
	data, ok := secret.Data[corev1.DockerConfigJsonKey]
	if !ok {
		return nil, &waiting{err: fmt.Errorf("pull secret %s has no %s key", key, corev1.DockerConfigJsonKey)}
	}
	return data, nil
}
