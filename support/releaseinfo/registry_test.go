package releaseinfo

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/hypershift-le/hypershift/support/releaseinfo/releasetest"
)

var testComponents = map[string]string{
	"hypershift":     "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:1111111111111111111111111111111111111111111111111111111111111111",
	"kube-apiserver": "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:2222222222222222222222222222222222222222222222222222222222222222",
	"etcd":           "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:3333333333333333333333333333333333333333333333333333333333333333",
}

// newTestProvider returns a provider whose registry client retries quickly.
func newTestProvider(opts ...Option) *RegistryProvider {
	p := NewRegistryProvider(opts...)
	p.backoff = &remote.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 2}
	return p
}

var sentinels = []error{ErrUnreachable, ErrUnauthorized, ErrNotFound, ErrMalformed}

// checkError fails t unless err wraps want, and no other sentinel, and its
// message holds every one of msgs.
func checkError(t *testing.T, err, want error, msgs ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("expected an error wrapping %q, got none", want)
	}
	for _, s := range sentinels {
		wanted := errors.Is(want, s)
		if got := errors.Is(err, s); got != wanted {
			t.Errorf("errors.Is(err, %q) = %v, want %v; err: %v", s, got, wanted, err)
		}
	}
	for _, msg := range msgs {
		if !strings.Contains(err.Error(), msg) {
			t.Errorf("expected the error to mention %q, got: %v", msg, err)
		}
	}
}

func TestLookup(t *testing.T) {
	t.Parallel()
	release := func(version string) map[string][]byte {
		return releasetest.ReleaseFiles(t, version, testComponents)
	}
	without := func(files map[string][]byte, name string) map[string][]byte {
		delete(files, name)
		return files
	}
	with := func(files map[string][]byte, name, content string) map[string][]byte {
		files[name] = []byte(content)
		return files
	}

	tests := []struct {
		name string
		// push pushes to reg and returns the pull spec to look up and, on
		// success, the digest to expect.
		push        func(t *testing.T, reg *releasetest.Registry) (pullSpec, digest string)
		pullSecret  []byte
		wantVersion string
		wantErr     error
		wantMsgs    []string
	}{
		{
			name: "when the tag names a release payload, it returns its version, digest and component images",
			push: func(_ *testing.T, reg *releasetest.Registry) (string, string) {
				return reg.PushRelease(t, "ocp/release:4.17.0", "4.17.0", testComponents)
			},
			wantVersion: "4.17.0",
		},
		{
			name: "when the pull spec is pinned by digest, it returns that payload",
			push: func(_ *testing.T, reg *releasetest.Registry) (string, string) {
				_, digest := reg.PushRelease(t, "ocp/release:4.17.1", "4.17.1", testComponents)
				return reg.Host() + "/ocp/release@" + digest, digest
			},
			wantVersion: "4.17.1",
		},
		{
			name: "when the pull secret has no entry for the registry, it reads anonymously",
			push: func(_ *testing.T, reg *releasetest.Registry) (string, string) {
				return reg.PushRelease(t, "ocp/release:4.17.2", "4.17.2", testComponents)
			},
			pullSecret:  releasetest.DockerConfigJSON("quay.io", "someone", "secret"),
			wantVersion: "4.17.2",
		},
		{
			name: "when a newer layer replaces release-metadata, the newer version wins",
			push: func(_ *testing.T, reg *releasetest.Registry) (string, string) {
				newer := map[string][]byte{ReleaseMetadataFile: release("4.18.0")[ReleaseMetadataFile]}
				return reg.PushLayers(t, "ocp/release:layered", release("4.17.0"), newer)
			},
			wantVersion: "4.18.0",
		},
		{
			name: "when image-references is YAML, it is read",
			push: func(_ *testing.T, reg *releasetest.Registry) (string, string) {
				yamlRefs := "kind: ImageStream\napiVersion: image.openshift.io/v1\nmetadata:\n  name: 4.17.0\nspec:\n  tags:\n"
				for _, n := range []string{"etcd", "hypershift", "kube-apiserver"} {
					yamlRefs += "  - name: " + n + "\n    from:\n      kind: DockerImage\n      name: " + testComponents[n] + "\n"
				}
				return reg.PushImage(t, "ocp/release:yaml", with(release("4.17.0"), ImageReferencesFile, yamlRefs))
			},
			wantVersion: "4.17.0",
		},
		{
			name: "when the payload lacks release-metadata, it is malformed",
			push: func(_ *testing.T, reg *releasetest.Registry) (string, string) {
				return reg.PushImage(t, "ocp/release:no-metadata", without(release("4.17.0"), ReleaseMetadataFile))
			},
			wantErr:  ErrMalformed,
			wantMsgs: []string{ReleaseMetadataFile, "not found"},
		},
		{
			name: "when the payload lacks image-references, it is malformed",
			push: func(_ *testing.T, reg *releasetest.Registry) (string, string) {
				return reg.PushImage(t, "ocp/release:no-references", without(release("4.17.0"), ImageReferencesFile))
			},
			wantErr:  ErrMalformed,
			wantMsgs: []string{ImageReferencesFile, "not found"},
		},
		{
			name: "when the release files are outside release-manifests, it is malformed",
			push: func(_ *testing.T, reg *releasetest.Registry) (string, string) {
				return reg.PushImage(t, "ocp/release:elsewhere", map[string][]byte{
					"manifests/release-metadata": release("4.17.0")[ReleaseMetadataFile],
					"manifests/image-references": release("4.17.0")[ImageReferencesFile],
				})
			},
			wantErr:  ErrMalformed,
			wantMsgs: []string{ImageReferencesFile, ReleaseMetadataFile},
		},
		{
			name: "when a newer layer whites out release-metadata, it is malformed",
			push: func(_ *testing.T, reg *releasetest.Registry) (string, string) {
				whiteout := map[string][]byte{"release-manifests/.wh.release-metadata": nil}
				return reg.PushLayers(t, "ocp/release:whiteout", release("4.17.0"), whiteout)
			},
			wantErr:  ErrMalformed,
			wantMsgs: []string{ReleaseMetadataFile},
		},
		{
			name: "when a newer layer makes release-manifests opaque, older release files are hidden",
			push: func(_ *testing.T, reg *releasetest.Registry) (string, string) {
				opaque := without(release("4.18.0"), ReleaseMetadataFile)
				opaque["release-manifests/.wh..wh..opq"] = nil
				return reg.PushLayers(t, "ocp/release:opaque", release("4.17.0"), opaque)
			},
			wantErr:  ErrMalformed,
			wantMsgs: []string{ReleaseMetadataFile},
		},
		{
			name: "when release-metadata is not JSON, it is malformed",
			push: func(_ *testing.T, reg *releasetest.Registry) (string, string) {
				return reg.PushImage(t, "ocp/release:bad-json", with(release("4.17.0"), ReleaseMetadataFile, `{"version": `))
			},
			wantErr:  ErrMalformed,
			wantMsgs: []string{ReleaseMetadataFile, "JSON"},
		},
		{
			name: "when release-metadata has an empty version, it is malformed",
			push: func(_ *testing.T, reg *releasetest.Registry) (string, string) {
				return reg.PushImage(t, "ocp/release:no-version", with(release("4.17.0"), ReleaseMetadataFile, `{"kind":"cincinnati-metadata-v0","version":""}`))
			},
			wantErr:  ErrMalformed,
			wantMsgs: []string{ReleaseMetadataFile, "no version"},
		},
		{
			name: "when image-references cannot be decoded, it is malformed",
			push: func(_ *testing.T, reg *releasetest.Registry) (string, string) {
				return reg.PushImage(t, "ocp/release:bad-references", with(release("4.17.0"), ImageReferencesFile, `{"spec": {"tags": "nope"`))
			},
			wantErr:  ErrMalformed,
			wantMsgs: []string{ImageReferencesFile},
		},
		{
			name: "when image-references is not an ImageStream, it is malformed",
			push: func(_ *testing.T, reg *releasetest.Registry) (string, string) {
				return reg.PushImage(t, "ocp/release:configmap", with(release("4.17.0"), ImageReferencesFile, `{"kind":"ConfigMap","data":{}}`))
			},
			wantErr:  ErrMalformed,
			wantMsgs: []string{ImageReferencesFile, "ConfigMap"},
		},
		{
			name: "when image-references names no DockerImage, it is malformed",
			push: func(_ *testing.T, reg *releasetest.Registry) (string, string) {
				return reg.PushImage(t, "ocp/release:no-images", with(release("4.17.0"), ImageReferencesFile,
					`{"kind":"ImageStream","spec":{"tags":[{"name":"etcd","from":{"kind":"ImageStreamTag","name":"etcd:latest"}}]}}`))
			},
			wantErr:  ErrMalformed,
			wantMsgs: []string{ImageReferencesFile, "no component images"},
		},
		{
			name: "when the tag does not exist, it is not found",
			push: func(_ *testing.T, reg *releasetest.Registry) (string, string) {
				reg.PushRelease(t, "ocp/release:4.17.0", "4.17.0", testComponents)
				return reg.Host() + "/ocp/release:4.99.0", ""
			},
			wantErr:  ErrNotFound,
			wantMsgs: []string{"ocp/release:4.99.0", "check the repository and the tag"},
		},
		{
			name: "when the repository does not exist, it is not found",
			push: func(_ *testing.T, reg *releasetest.Registry) (string, string) {
				return reg.Host() + "/nobody/here:4.17.0", ""
			},
			wantErr:  ErrNotFound,
			wantMsgs: []string{"nobody/here:4.17.0"},
		},
		{
			name: "when the pull spec cannot be parsed, it is malformed",
			push: func(_ *testing.T, reg *releasetest.Registry) (string, string) {
				return reg.Host() + "/Not A Valid::Ref", ""
			},
			wantErr:  ErrMalformed,
			wantMsgs: []string{"invalid release image pull spec"},
		},
		{
			name: "when the pull spec is empty, it is malformed",
			push: func(_ *testing.T, _ *releasetest.Registry) (string, string) {
				return "", ""
			},
			wantErr:  ErrMalformed,
			wantMsgs: []string{"invalid release image pull spec"},
		},
		{
			name: "when the pull secret is not dockerconfigjson, it is malformed",
			push: func(_ *testing.T, reg *releasetest.Registry) (string, string) {
				return reg.PushRelease(t, "ocp/release:4.17.0", "4.17.0", testComponents)
			},
			pullSecret: []byte(`{"auths": `),
			wantErr:    ErrMalformed,
			wantMsgs:   []string{"pull secret is not valid dockerconfigjson"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			reg := releasetest.NewRegistry(t)
			pullSpec, digest := tc.push(t, reg)
			provider := newTestProvider()

			got, err := provider.Lookup(t.Context(), pullSpec, tc.pullSecret)
			if tc.wantErr != nil {
				checkError(t, err, tc.wantErr, tc.wantMsgs...)
				return
			}
			if err != nil {
				t.Fatalf("Lookup(%q) failed: %v", pullSpec, err)
			}
			want := &ReleaseImage{PullSpec: pullSpec, Digest: digest, Version: tc.wantVersion, ComponentImages: testComponents}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Lookup(%q) mismatch (-want +got):\n%s", pullSpec, diff)
			}
		})
	}
}
