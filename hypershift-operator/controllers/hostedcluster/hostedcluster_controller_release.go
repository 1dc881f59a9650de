package hostedcluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
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
// the payload the control plane runs (pinRelease). A failure blocks the
// pass on ValidConfiguration or ValidReleaseImage before anything is
// applied: what already runs keeps running. A missing pull secret, a
// release tag that does not exist, credentials the registry refuses and a
// payload that is not a release wait on the user (waitsOnUser).
func (r *Reconciler) reconcileRelease(ctx context.Context, s *scope) (ctrl.Result, error) {
	hc := s.hc
	pullSecret, wait, err := r.pullSecret(ctx, hc)
	if err != nil {
		return ctrl.Result{}, s.block(hyperv1.ValidConfiguration, hyperv1.PullSecretUnavailableReason, err.Error(), wait, err)
	}
	// What the spec names now: on a tag, one HEAD request; the payload
	// itself is read once per digest.
	current, err := r.Releases.Lookup(ctx, hc.Spec.Release.Image, pullSecret)
	if err != nil {
		return ctrl.Result{}, blockRelease(s, err)
	}
	pin := pinRelease(hc, current.Digest)
	release := current
	if pin.moved {
		if release, err = r.Releases.Lookup(ctx, pin.image, pullSecret); err != nil {
			return ctrl.Result{}, blockRelease(s, fmt.Errorf("%w; the tag now names %s: %s", err, current.Digest, acceptHint(hc, current.Digest)))
		}
	}
	s.release = release
	s.releaseImage = pin.image
	s.pin, s.digest = pin, current.Digest
	s.pullSecret = pullSecret
	if err := r.recordPin(ctx, s); err != nil {
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

// recordPin writes a new pin to the status at once, before anything is
// applied with it: a pin only the HostedControlPlane knew would be lost to
// a status write that fails at the end of the pass (a conflict with a
// user's edit), and the next pass would pin the tag again, to whatever it
// names by then. This write shows what the pass found of the release
// (setRelease), nothing more. A new pin is reported with a Normal event
// once the status shows it.
func (r *Reconciler) recordPin(ctx context.Context, s *scope) error {
	image, version := s.releaseImage, s.release.Version
	if before := s.original.Status.Version; before != nil && before.Desired.Image == image && before.RequestedImage == s.hc.Spec.Release.Image {
		return nil
	}
	r.setRelease(s)
	if err := r.Client.Status().Update(ctx, s.hc); err != nil {
		return fmt.Errorf("failed to record the release pin %s in the status (nothing was applied with it): %w", image, err)
	}
	r.statusWrites.wrote(s.hc)
	s.written = s.hc.Status.DeepCopy()
	if !s.newPin() {
		return nil
	}
	spec := s.hc.Spec.Release.Image
	r.reportOnce(s, ReleaseImagePinnedReason, image, func() {
		r.Recorder.Eventf(s.hc, nil, corev1.EventTypeNormal, ReleaseImagePinnedReason, "Pin",
			"Release image %s is pinned to %s (version %s): the control plane runs that payload until spec.release.image changes or a new digest is accepted", spec, image, version)
	})
	return nil
}

// newPin reports whether the pass pinned a payload the status did not
// show when it started.
func (s *scope) newPin() bool {
	before := s.original.Status.Version
	return s.release != nil && (before == nil || before.Desired.Image != s.releaseImage)
}

// acceptHint says how to roll out the payload the tag names now.
func acceptHint(hc *hyperv1.HostedCluster, digest string) string {
	return fmt.Sprintf("to roll it out, annotate the HostedCluster with %s=%s (hypershift update cluster %s -n %s --accept-release-digest=%s), or set spec.release.image to another pull spec",
		hyperv1.AcceptReleaseDigestAnnotation, digest, hc.Name, hc.Namespace, digest)
}

// blockRelease stops the pass on a payload that cannot be read.
func blockRelease(s *scope, err error) error {
	reason := releaseinfo.Reason(err)
	wait := notWaiting
	switch reason {
	case hyperv1.ReleaseImageNotFoundReason, hyperv1.ReleaseImageUnauthorizedReason, hyperv1.ReleaseImageMalformedReason:
		wait = waitsOnUser
	}
	// The error names the image already: one sentence, no repeated
	// prefix.
	return s.block(hyperv1.ValidReleaseImage, reason, upperFirst(err.Error()), wait, err)
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
// secret, read past the cache once per change (userSecrets): the HO does
// not cache every Secret. A pull secret that is missing, or has no such
// key, waits on the user.
func (r *Reconciler) pullSecret(ctx context.Context, hc *hyperv1.HostedCluster) ([]byte, waitKind, error) {
	key := client.ObjectKey{Namespace: hc.Namespace, Name: hc.Spec.PullSecret.Name}
	secret, err := r.secrets.Data(ctx, key)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, waitsOnUser, fmt.Errorf("pull secret %s not found: create it with your registry credentials under the %s key", key, corev1.DockerConfigJsonKey)
		}
		return nil, notWaiting, fmt.Errorf("failed to get pull secret %s: %w", key, err)
	}
	data, ok := secret[corev1.DockerConfigJsonKey]
	if !ok {
		return nil, waitsOnUser, fmt.Errorf("pull secret %s has no %s key", key, corev1.DockerConfigJsonKey)
	}
	return data, notWaiting, nil
}
