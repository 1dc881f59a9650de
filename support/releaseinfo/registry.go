package releaseinfo

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

const (
	// DefaultTimeout bounds a single Lookup unless WithTimeout says otherwise.
	DefaultTimeout = 30 * time.Second
	// DefaultCacheSize is how many payloads a RegistryProvider keeps in
	// memory unless WithCacheSize says otherwise.
	DefaultCacheSize = 64

	userAgent = "hypershift-releaseinfo"
)

// Option configures a RegistryProvider.
type Option func(*RegistryProvider)

// WithInsecureRegistries lets the provider talk plain HTTP to the given
// registries. A host is matched against the pull spec's registry either as
// written ("registry.example.com:5000") or by host name alone
// ("registry.example.com"). localhost and 127.0.0.1 are always reached over
// plain HTTP when HTTPS fails.
func WithInsecureRegistries(hosts ...string) Option {
	return func(p *RegistryProvider) {
		for _, h := range hosts {
			if h = strings.ToLower(strings.TrimSpace(h)); h != "" {
				p.insecure[h] = true
			}
		}
	}
}

// WithTimeout bounds each Lookup, on top of the caller's context. A
// non-positive duration keeps DefaultTimeout.
func WithTimeout(d time.Duration) Option {
	return func(p *RegistryProvider) {
		if d > 0 {
			p.timeout = d
		}
	}
}

// WithCacheSize sets how many payloads, keyed by digest, are kept in memory;
// the least recently used is evicted first. Zero or less disables caching.
func WithCacheSize(n int) Option {
	return func(p *RegistryProvider) {
		p.cache.max = max(n, 0)
	}
}

// WithTransport sets the HTTP transport used to reach registries, e.g. one
// with a proxy or extra trusted CAs. Retries and authentication are layered
// on top of it.
func WithTransport(rt http.RoundTripper) Option {
	return func(p *RegistryProvider) {
		p.transport = rt
	}
}

// RegistryProvider is a Provider that reads release payloads from their
// container registry. It is safe for concurrent use; the payloads it has read
// are cached by digest, and the registry is asked for the current digest of
// the pull spec (a cheap HEAD request) on every Lookup, which also checks the
// caller's credentials before a cached payload is served. When it first
// reads a payload it resolves, the same way, each component image the
// payload names by tag, and pins it to that digest for as long as the
// payload stays cached.
type RegistryProvider struct {
	insecure  map[string]bool
	timeout   time.Duration
	transport http.RoundTripper
	// backoff overrides the registry client's retry backoff; tests shorten it.
	backoff *remote.Backoff
	cache   *payloadCache
	fetches atomic.Int64
}

var _ Provider = (*RegistryProvider)(nil)

// NewRegistryProvider returns a RegistryProvider configured by opts.
func NewRegistryProvider(opts ...Option) *RegistryProvider {
	p := &RegistryProvider{
		insecure: map[string]bool{},
		timeout:  DefaultTimeout,
		cache:    newPayloadCache(DefaultCacheSize),
	}
	for _, opt := range opts {
		opt(p)
	}
	return p
}

// Fetches reports how many times the provider has read a payload's contents
// from a registry, i.e. how many lookups missed the cache.
func (p *RegistryProvider) Fetches() int64 {
	return p.fetches.Load()
}

// Lookup implements Provider.
func (p *RegistryProvider) Lookup(ctx context.Context, pullSpec string, pullSecret []byte) (*ReleaseImage, error) {
	ref, err := p.parseReference(pullSpec)
	if err != nil {
		return nil, fmt.Errorf("invalid release image pull spec %q, expected e.g. quay.io/openshift-release-dev/ocp-release:4.17.0-x86_64: %w: %w", pullSpec, err, ErrMalformed)
	}
	keychain, err := PullSecretKeychain(pullSecret)
	if err != nil {
		return nil, fmt.Errorf("failed to read release image %s: %w", pullSpec, err)
	}

	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	opts := p.remoteOptions(ctx, keychain)
	registry := ref.Context().RegistryStr()

	desc, err := remote.Head(ref, opts...)
	if err != nil {
		return nil, classify(pullSpec, registry, err, ErrUnreachable)
	}
	digest := desc.Digest.String()

	release, err := p.cache.get(ctx, digest, func() (*ReleaseImage, error) {
		return p.fetch(ctx, pullSpec, ref.Context().Digest(digest), opts)
	})
	if err != nil {
		if !isClassified(err) {
			err = classify(pullSpec, registry, err, ErrUnreachable)
		}
		return nil, err
	}
	return &ReleaseImage{
		PullSpec:        pullSpec,
		Digest:          release.Digest,
		Version:         release.Version,
		ComponentImages: maps.Clone(release.ComponentImages),
	}, nil
}

// fetch reads the payload at ref, which is pinned by digest so that a tag
// moving between the HEAD request and this read cannot mix two payloads,
// and pins the component images it names by tag (pinComponents).
func (p *RegistryProvider) fetch(ctx context.Context, pullSpec string, ref name.Digest, opts []remote.Option) (*ReleaseImage, error) {
	p.fetches.Add(1)
	registry := ref.Context().RegistryStr()
	img, err := remote.Image(ref, opts...)
	if err != nil {
		return nil, classify(pullSpec, registry, err, ErrMalformed)
	}
	files, err := readReleaseFiles(img)
	if err != nil {
		if isClassified(err) {
			return nil, fmt.Errorf("failed to read release image %s: %w", pullSpec, err)
		}
		return nil, classify(pullSpec, registry, err, ErrMalformed)
	}
	version, components, err := parseReleaseFiles(files)
	if err != nil {
		return nil, fmt.Errorf("failed to read release image %s: %w", pullSpec, err)
	}
	return &ReleaseImage{
		Digest:          ref.DigestStr(),
		Version:         version,
		ComponentImages: p.pinComponents(ctx, components, opts),
	}, nil
}

func (p *RegistryProvider) remoteOptions(ctx context.Context, keychain authn.Keychain) []remote.Option {
	opts := []remote.Option{
		remote.WithContext(ctx),
		remote.WithAuthFromKeychain(keychain),
		remote.WithUserAgent(userAgent),
	}
	if p.transport != nil {
		opts = append(opts, remote.WithTransport(p.transport))
	}
	if p.backoff != nil {
		opts = append(opts, remote.WithRetryBackoff(*p.backoff))
	}
	return opts
}

// parseReference parses pullSpec, marking its registry insecure when it is
// one of the provider's insecure registries.
func (p *RegistryProvider) parseReference(pullSpec string) (name.Reference, error) {
	pullSpec = strings.TrimSpace(pullSpec)
	ref, err := name.ParseReference(pullSpec)
	if err != nil {
		return nil, err
	}
	if !p.isInsecure(ref.Context().RegistryStr()) {
		return ref, nil
	}
	return name.ParseReference(pullSpec, name.Insecure)
}

func (p *RegistryProvider) isInsecure(registry string) bool {
	registry = strings.ToLower(registry)
	if p.insecure[registry] {
		return true
	}
	host, _, err := net.SplitHostPort(registry)
	return err == nil && p.insecure[host]
}
