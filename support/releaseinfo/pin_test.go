package releaseinfo

import (
	"testing"

	"github.com/hypershift-le/hypershift/support/releaseinfo/releasetest"
)

const testDigest = "sha256:4444444444444444444444444444444444444444444444444444444444444444"

func TestPinnedPullSpec(t *testing.T) {
	for _, tc := range []struct {
		name, pullSpec, want string
	}{
		{name: "when the pull spec names a tag, the tag gives way to the digest",
			pullSpec: "quay.io/openshift-release-dev/ocp-release:4.17.0-x86_64", want: "quay.io/openshift-release-dev/ocp-release@" + testDigest},
		{name: "when the registry has a port and the repository a tag, the port stays",
			pullSpec: "127.0.0.1:5000/ocp-release:4.17.0", want: "127.0.0.1:5000/ocp-release@" + testDigest},
		{name: "when the registry has a port and there is no tag, the port stays",
			pullSpec: "127.0.0.1:5000/ocp-release", want: "127.0.0.1:5000/ocp-release@" + testDigest},
		{name: "when the pull spec names a digest already, it keeps it",
			pullSpec: "quay.io/ocp/release@sha256:1111111111111111111111111111111111111111111111111111111111111111",
			want:     "quay.io/ocp/release@sha256:1111111111111111111111111111111111111111111111111111111111111111"},
		{name: "when the pull spec names a tag and a digest, it is kept as written",
			pullSpec: "quay.io/ocp/release:4.17.0@sha256:1111111111111111111111111111111111111111111111111111111111111111",
			want:     "quay.io/ocp/release:4.17.0@sha256:1111111111111111111111111111111111111111111111111111111111111111"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := PinnedPullSpec(tc.pullSpec, testDigest); got != tc.want {
				t.Errorf("PinnedPullSpec(%q) = %q, want %q", tc.pullSpec, got, tc.want)
			}
		})
	}
}

func TestLookupPinsComponentImages(t *testing.T) {
	reg := releasetest.NewRegistry(t)
	etcd, etcdDigest := reg.PushImage(t, "etcd:4.17.0", map[string][]byte{"usr/bin/etcd": []byte("v1")})
	missing := reg.Host() + "/hyperkube:not-pushed"
	byDigest := testComponents["hypershift"]
	pullSpec, _ := reg.PushRelease(t, "ocp/release:4.17.0", "4.17.0", map[string]string{
		"etcd": etcd, "hyperkube": missing, "hypershift": byDigest,
	})
	p := newTestProvider()

	release := mustLookup(t, p, pullSpec, nil)
	t.Run("when a component's tag resolves, the image is pinned to its digest", func(t *testing.T) {
		if got, want := release.ComponentImages["etcd"], reg.Host()+"/etcd@"+etcdDigest; got != want {
			t.Errorf("etcd image = %q, want %q", got, want)
		}
	})
	t.Run("when a component's tag does not resolve, the image keeps its tag", func(t *testing.T) {
		if got := release.ComponentImages["hyperkube"]; got != missing {
			t.Errorf("hyperkube image = %q, want %q", got, missing)
		}
	})
	t.Run("when a component names a digest, it keeps it", func(t *testing.T) {
		if got := release.ComponentImages["hypershift"]; got != byDigest {
			t.Errorf("hypershift image = %q, want %q", got, byDigest)
		}
	})
	t.Run("when a component's tag moves, the cached payload keeps naming the first image", func(t *testing.T) {
		reg.PushImage(t, "etcd:4.17.0", map[string][]byte{"usr/bin/etcd": []byte("v2")})
		if got, want := mustLookup(t, p, pullSpec, nil).ComponentImages["etcd"], reg.Host()+"/etcd@"+etcdDigest; got != want {
			t.Errorf("etcd image = %q, want %q", got, want)
		}
	})
}

func TestLookupByPinnedPullSpec(t *testing.T) {
	reg := releasetest.NewRegistry(t)
	tag, first := reg.PushRelease(t, "ocp/release:4.17", "4.17.0", testComponents)
	reg.PushRelease(t, "ocp/release:4.17", "4.17.1", testComponents)
	p := newTestProvider()

	pinned := PinnedPullSpec(tag, first)
	got := mustLookup(t, p, pinned, nil)
	if got.Version != "4.17.0" || got.Digest != first || got.PullSpec != pinned {
		t.Errorf("Lookup(%q) = version %q, digest %q, pull spec %q; want the first payload, 4.17.0 %s", pinned, got.Version, got.Digest, got.PullSpec, first)
	}
	if moved := mustLookup(t, p, tag, nil); moved.Version != "4.17.1" || moved.Digest == first {
		t.Errorf("Lookup(%q) = version %q, digest %q; want the payload the tag names now", tag, moved.Version, moved.Digest)
	}
}
