package releaseinfo

import (
	"encoding/base64"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
)

func basicAuth(user, password string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
}

func TestPullSecretKeychain(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		pullSecret string
		image      string
		// wantUser is the user the keychain picks; "" means anonymous.
		wantUser     string
		wantPassword string
	}{
		{
			name:       "when the registry host matches an entry, its credentials are used",
			pullSecret: `{"auths":{"quay.io":{"auth":"` + basicAuth("quayuser", "quaypass") + `"}}}`,
			image:      "quay.io/openshift-release-dev/ocp-release:4.17.0-x86_64",
			wantUser:   "quayuser", wantPassword: "quaypass",
		},
		{
			name:       "when the entry's key has a scheme and trailing slash, it still matches",
			pullSecret: `{"auths":{"https://quay.io/":{"auth":"` + basicAuth("quayuser", "quaypass") + `"}}}`,
			image:      "quay.io/openshift-release-dev/ocp-release:4.17.0",
			wantUser:   "quayuser", wantPassword: "quaypass",
		},
		{
			name:       "when the entry's host differs only in case, it matches",
			pullSecret: `{"auths":{"Quay.IO":{"auth":"` + basicAuth("quayuser", "quaypass") + `"}}}`,
			image:      "quay.io/openshift-release-dev/ocp-release:4.17.0",
			wantUser:   "quayuser", wantPassword: "quaypass",
		},
		{
			name:       "when the entry gives username and password fields, they are used",
			pullSecret: `{"auths":{"registry.example.com":{"username":"u","password":"p:with:colons"}}}`,
			image:      "registry.example.com/ocp/release:4.17.0",
			wantUser:   "u", wantPassword: "p:with:colons",
		},
		{
			name:       "when the auth field's password holds colons, only the first colon splits",
			pullSecret: `{"auths":{"registry.example.com":{"auth":"` + basicAuth("u", "a:b:c") + `"}}}`,
			image:      "registry.example.com/ocp/release:4.17.0",
			wantUser:   "u", wantPassword: "a:b:c",
		},
		{
			name:       "when the entry is for docker.io, it matches an unqualified Docker Hub image",
			pullSecret: `{"auths":{"docker.io":{"auth":"` + basicAuth("hubuser", "hubpass") + `"}}}`,
			image:      "busybox:latest",
			wantUser:   "hubuser", wantPassword: "hubpass",
		},
		{
			name:       "when the entry is the legacy Docker Hub URL, it matches docker.io images",
			pullSecret: `{"auths":{"https://index.docker.io/v1/":{"auth":"` + basicAuth("hubuser", "hubpass") + `"}}}`,
			image:      "docker.io/library/busybox:latest",
			wantUser:   "hubuser", wantPassword: "hubpass",
		},
		{
			name:       "when the entry is for index.docker.io, it matches docker.io images",
			pullSecret: `{"auths":{"index.docker.io":{"auth":"` + basicAuth("hubuser", "hubpass") + `"}}}`,
			image:      "docker.io/openshift/origin-release:4.17",
			wantUser:   "hubuser", wantPassword: "hubpass",
		},
		{
			name:       "when the entry's port differs from the image's, it does not match",
			pullSecret: `{"auths":{"localhost:5000":{"auth":"` + basicAuth("u", "p") + `"}}}`,
			image:      "localhost:5001/ocp/release:4.17.0",
		},
		{
			name:       "when the entry's port matches the image's, it matches",
			pullSecret: `{"auths":{"localhost:5000":{"auth":"` + basicAuth("u", "p") + `"}}}`,
			image:      "localhost:5000/ocp/release:4.17.0",
			wantUser:   "u", wantPassword: "p",
		},
		{
			name:       "when an entry names the repository's namespace, it wins over the host entry",
			pullSecret: `{"auths":{"quay.io":{"auth":"` + basicAuth("host", "h") + `"},"quay.io/openshift-release-dev":{"auth":"` + basicAuth("ns", "n") + `"}}}`,
			image:      "quay.io/openshift-release-dev/ocp-release:4.17.0",
			wantUser:   "ns", wantPassword: "n",
		},
		{
			name:       "when a namespace entry names another namespace, the host entry is used",
			pullSecret: `{"auths":{"quay.io":{"auth":"` + basicAuth("host", "h") + `"},"quay.io/openshift-release-dev":{"auth":"` + basicAuth("ns", "n") + `"}}}`,
			image:      "quay.io/someone-else/ocp-release:4.17.0",
			wantUser:   "host", wantPassword: "h",
		},
		{
			name:       "when a namespace entry is only a string prefix of the repository, it does not match",
			pullSecret: `{"auths":{"quay.io/openshift":{"auth":"` + basicAuth("ns", "n") + `"}}}`,
			image:      "quay.io/openshift-release-dev/ocp-release:4.17.0",
		},
		{
			name:       "when no entry matches the registry, access is anonymous",
			pullSecret: `{"auths":{"quay.io":{"auth":"` + basicAuth("u", "p") + `"}}}`,
			image:      "registry.ci.openshift.org/ocp/release:4.17.0",
		},
		{
			name:       "when the registry only shares a suffix with an entry, it does not match",
			pullSecret: `{"auths":{"quay.io":{"auth":"` + basicAuth("u", "p") + `"}}}`,
			image:      "evilquay.io/ocp/release:4.17.0",
		},
		{
			name:       "when the entry has no credentials, access is anonymous",
			pullSecret: `{"auths":{"quay.io":{}}}`,
			image:      "quay.io/ocp/release:4.17.0",
		},
		{
			name:       "when the pull secret is empty, access is anonymous",
			pullSecret: "",
			image:      "quay.io/ocp/release:4.17.0",
		},
		{
			name:       "when the pull secret has no entries, access is anonymous",
			pullSecret: `{"auths":{}}`,
			image:      "quay.io/ocp/release:4.17.0",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			kc, err := PullSecretKeychain([]byte(tc.pullSecret))
			if err != nil {
				t.Fatalf("PullSecretKeychain failed: %v", err)
			}
			ref, err := name.ParseReference(tc.image)
			if err != nil {
				t.Fatalf("failed to parse %q: %v", tc.image, err)
			}
			auth, err := kc.Resolve(ref.Context())
			if err != nil {
				t.Fatalf("Resolve failed: %v", err)
			}
			if tc.wantUser == "" {
				if auth != authn.Anonymous {
					cfg, _ := authn.Authorization(t.Context(), auth)
					t.Errorf("expected anonymous access, got user %q", cfg.Username)
				}
				return
			}
			cfg, err := authn.Authorization(t.Context(), auth)
			if err != nil {
				t.Fatalf("Authorization failed: %v", err)
			}
			if cfg.Username != tc.wantUser || cfg.Password != tc.wantPassword {
				t.Errorf("got %q/%q, want %q/%q", cfg.Username, cfg.Password, tc.wantUser, tc.wantPassword)
			}
		})
	}
}

func TestPullSecretKeychainRejectsMalformedSecrets(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		pullSecret string
		wantMsg    string
	}{
		{name: "when the pull secret is not JSON, it is malformed", pullSecret: "auths: {}", wantMsg: "invalid character"},
		{name: "when the pull secret is truncated, it is malformed", pullSecret: `{"auths":{`, wantMsg: "unexpected end"},
		{name: "when the pull secret is a legacy .dockercfg, it is malformed", pullSecret: `{"quay.io":{"auth":"dTpw"}}`, wantMsg: `no "auths"`},
		{name: "when an entry's auth is not base64, it is malformed", pullSecret: `{"auths":{"quay.io":{"auth":"%%%"}}}`, wantMsg: `"quay.io": "auth" is not base64`},
		{name: "when an entry's auth lacks a colon, it is malformed", pullSecret: `{"auths":{"quay.io":{"auth":"` + base64.StdEncoding.EncodeToString([]byte("nocolon")) + `"}}}`, wantMsg: "user:password"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := PullSecretKeychain([]byte(tc.pullSecret))
			checkError(t, err, ErrMalformed, "pull secret is not valid dockerconfigjson", tc.wantMsg)
		})
	}
}
