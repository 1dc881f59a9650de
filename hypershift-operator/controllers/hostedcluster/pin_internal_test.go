package hostedcluster

import (
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
)

func TestPinRelease(t *testing.T) {
	const (
		tag      = "registry.example.com/ocp/release:4.17.0"
		oldD     = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
		newD     = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
		oldPin   = "registry.example.com/ocp/release@" + oldD
		newPin   = "registry.example.com/ocp/release@" + newD
		byDigest = "registry.example.com/ocp/release:4.17.0@" + oldD
	)
	cluster := func(spec, requested, desired, accepted string) *hyperv1.HostedCluster {
		hc := &hyperv1.HostedCluster{Spec: hyperv1.HostedClusterSpec{Release: hyperv1.Release{Image: spec}}}
		if accepted != "" {
			hc.Annotations = map[string]string{hyperv1.AcceptReleaseDigestAnnotation: accepted}
		}
		if desired != "" {
			hc.Status.Version = &hyperv1.ClusterVersionStatus{RequestedImage: requested, Desired: configv1.Release{Image: desired}}
		}
		return hc
	}
	for _, tc := range []struct {
		name   string
		hc     *hyperv1.HostedCluster
		digest string
		want   pinned
	}{
		{name: "when nothing is pinned yet, the digest the tag names is pinned",
			hc: cluster(tag, "", "", ""), digest: oldD, want: pinned{image: oldPin}},
		{name: "when the tag still names the pinned digest, the pin stays",
			hc: cluster(tag, tag, oldPin, ""), digest: oldD, want: pinned{image: oldPin}},
		{name: "when the tag moved, the old pin stays and the move is reported",
			hc: cluster(tag, tag, oldPin, ""), digest: newD, want: pinned{image: oldPin, moved: true}},
		{name: "when the tag moved and another digest is accepted, the old pin stays",
			hc: cluster(tag, tag, oldPin, "sha256:3333333333333333333333333333333333333333333333333333333333333333"), digest: newD, want: pinned{image: oldPin, moved: true}},
		{name: "when the tag moved and its new digest is accepted, the new digest is pinned",
			hc: cluster(tag, tag, oldPin, newD), digest: newD, want: pinned{image: newPin}},
		{name: "when the spec changed, the new spec is pinned afresh",
			hc: cluster(tag, "registry.example.com/ocp/release:4.16.9", oldPin, ""), digest: newD, want: pinned{image: newPin}},
		{name: "when status was written by an operator that did not pin, the spec is pinned afresh",
			hc: cluster(tag, "", tag, ""), digest: newD, want: pinned{image: newPin}},
		{name: "when the spec names a digest, it is kept as written",
			hc: cluster(byDigest, byDigest, byDigest, ""), digest: oldD, want: pinned{image: byDigest}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.hc.ObjectMeta = metav1.ObjectMeta{Name: "demo", Namespace: "clusters", Annotations: tc.hc.Annotations}
			if got := pinRelease(tc.hc, tc.digest); got != tc.want {
				t.Errorf("pinRelease = %+v, want %+v", got, tc.want)
			}
		})
	}
}
