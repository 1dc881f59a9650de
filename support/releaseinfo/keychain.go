package releaseinfo

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
)

// dockerHubRegistry is the name go-containerregistry gives Docker Hub; pull
// secrets may spell it any of the ways in dockerHubAliases.
const dockerHubRegistry = name.DefaultRegistry

var dockerHubAliases = map[string]bool{
	"docker.io":               true,
	"index.docker.io":         true,
	"registry-1.docker.io":    true,
	"registry.hub.docker.com": true,
}

// PullSecretKeychain returns an authn.Keychain serving the credentials of a
// kubernetes.io/dockerconfigjson pull secret, i.e.
// {"auths":{"<registry>":{"auth":"<base64 of user:password>"}}}, where an
// entry may also give "username" and "password", "identitytoken" or
// "registrytoken". A registry key may carry a scheme and a repository path
// ("https://quay.io/openshift-release-dev"); the entry with the longest path
// that prefixes the image's repository wins. Docker Hub's aliases are treated
// as one registry. A nil or empty pull secret gives anonymous access; one that
// cannot be decoded gives an error wrapping ErrMalformed.
func PullSecretKeychain(pullSecret []byte) (authn.Keychain, error) {
	if len(bytes.TrimSpace(pullSecret)) == 0 {
		return &pullSecretKeychain{}, nil
	}
	var config struct {
		Auths map[string]dockerConfigEntry `json:"auths"`
	}
	if err := json.Unmarshal(pullSecret, &config); err != nil {
		return nil, invalidPullSecret(err)
	}
	if config.Auths == nil {
		return nil, invalidPullSecret(errors.New(`it has no "auths" object`))
	}

	keys := make([]string, 0, len(config.Auths))
	for key := range config.Auths {
		keys = append(keys, key)
	}
	sort.Strings(keys)

	kc := &pullSecretKeychain{}
	for _, key := range keys {
		auth, ok, err := config.Auths[key].authConfig()
		if err != nil {
			return nil, invalidPullSecret(fmt.Errorf("entry for %q: %w", key, err))
		}
		if !ok {
			continue
		}
		registry, repoPath := splitAuthKey(key)
		if registry == "" {
			continue
		}
		kc.entries = append(kc.entries, keychainEntry{registry: registry, path: repoPath, auth: auth})
	}
	return kc, nil
}

func invalidPullSecret(err error) error {
	return fmt.Errorf(`pull secret is not valid dockerconfigjson, expected {"auths":{"<registry>":{"auth":"<base64 of user:password>"}}}: %w: %w`, err, ErrMalformed)
}

type dockerConfigEntry struct {
	Auth          string `json:"auth,omitempty"`
	Username      string `json:"username,omitempty"`
	Password      string `json:"password,omitempty"`
	IdentityToken string `json:"identitytoken,omitempty"`
	RegistryToken string `json:"registrytoken,omitempty"`
}

// authConfig returns the entry's credentials and whether it has any.
func (e dockerConfigEntry) authConfig() (authn.AuthConfig, bool, error) {
	cfg := authn.AuthConfig{
		Username:      e.Username,
		Password:      e.Password,
		IdentityToken: e.IdentityToken,
		RegistryToken: e.RegistryToken,
	}
	if e.Auth != "" {
		decoded, err := base64.StdEncoding.DecodeString(e.Auth)
		if err != nil {
			if decoded, err = base64.RawStdEncoding.DecodeString(e.Auth); err != nil {
				return authn.AuthConfig{}, false, errors.New(`"auth" is not base64`)
			}
		}
		user, password, ok := strings.Cut(string(decoded), ":")
		if !ok {
			return authn.AuthConfig{}, false, errors.New(`"auth" does not decode to user:password`)
		}
		cfg.Username, cfg.Password = user, password
	}
	ok := cfg.Username != "" || cfg.Password != "" || cfg.IdentityToken != "" || cfg.RegistryToken != ""
	return cfg, ok, nil
}

// splitAuthKey turns a pull secret key such as "https://quay.io/org/" into
// its registry ("quay.io") and repository path ("org").
func splitAuthKey(key string) (registry, repoPath string) {
	key = strings.TrimSpace(key)
	hadScheme := false
	for _, scheme := range []string{"https://", "http://"} {
		if len(key) >= len(scheme) && strings.EqualFold(key[:len(scheme)], scheme) {
			key, hadScheme = key[len(scheme):], true
		}
	}
	registry, repoPath, _ = strings.Cut(key, "/")
	repoPath = strings.Trim(repoPath, "/")
	// "https://index.docker.io/v1/" names the registry, not a repository.
	if hadScheme && (repoPath == "v1" || repoPath == "v2") {
		repoPath = ""
	}
	return normalizeRegistry(registry), repoPath
}

func normalizeRegistry(registry string) string {
	registry = strings.ToLower(registry)
	if dockerHubAliases[registry] {
		return dockerHubRegistry
	}
	return registry
}

type keychainEntry struct {
	registry string
	path     string
	auth     authn.AuthConfig
}

type pullSecretKeychain struct {
	entries []keychainEntry
}

var _ authn.Keychain = (*pullSecretKeychain)(nil)

// Resolve implements authn.Keychain.
func (k *pullSecretKeychain) Resolve(target authn.Resource) (authn.Authenticator, error) {
	registry := normalizeRegistry(target.RegistryStr())
	repoPath := strings.Trim(strings.TrimPrefix(target.String(), target.RegistryStr()), "/")

	var best *keychainEntry
	for i := range k.entries {
		e := &k.entries[i]
		if e.registry != registry {
			continue
		}
		if e.path != "" && repoPath != e.path && !strings.HasPrefix(repoPath, e.path+"/") {
			continue
		}
		if best == nil || len(e.path) > len(best.path) {
			best = e
		}
	}
	if best == nil {
		return authn.Anonymous, nil
	}
	return authn.FromConfig(best.auth), nil
}
