package releaseinfo

import (
	"sync"
	"testing"

	"github.com/hypershift-le/hypershift/support/releaseinfo/releasetest"
)

func mustLookup(t *testing.T, p *RegistryProvider, pullSpec string, pullSecret []byte) *ReleaseImage {
	t.Helper()
	got, err := p.Lookup(t.Context(), pullSpec, pullSecret)
	if err != nil {
		t.Fatalf("Lookup(%q) failed: %v", pullSpec, err)
	}
	return got
}

func TestLookupCache(t *testing.T) {
	t.Parallel()

	t.Run("when the same tag is looked up twice, the payload is read once", func(t *testing.T) {
		t.Parallel()
		reg := releasetest.NewRegistry(t)
		pullSpec, _ := reg.PushRelease(t, "ocp/release:4.17.0", "4.17.0", testComponents)
		p := newTestProvider()
		first := mustLookup(t, p, pullSpec, nil)
		second := mustLookup(t, p, pullSpec, nil)
		if got := p.Fetches(); got != 1 {
			t.Errorf("Fetches() = %d, want 1", got)
		}
		if first.Digest != second.Digest || second.Version != "4.17.0" {
			t.Errorf("second lookup returned %+v, want the same payload as %+v", second, first)
		}
	})

	t.Run("when a new payload is pushed under the same tag, the next lookup returns it", func(t *testing.T) {
		t.Parallel()
		reg := releasetest.NewRegistry(t)
		pullSpec, oldDigest := reg.PushRelease(t, "ocp/release:4.17", "4.17.0", testComponents)
		p := newTestProvider()
		if got := mustLookup(t, p, pullSpec, nil); got.Version != "4.17.0" {
			t.Fatalf("first lookup returned version %q, want 4.17.0", got.Version)
		}
		_, newDigest := reg.PushRelease(t, "ocp/release:4.17", "4.17.1", testComponents)
		if newDigest == oldDigest {
			t.Fatalf("the new payload has the old digest %s", oldDigest)
		}
		got := mustLookup(t, p, pullSpec, nil)
		if got.Version != "4.17.1" || got.Digest != newDigest {
			t.Errorf("got version %q digest %q, want 4.17.1 %s", got.Version, got.Digest, newDigest)
		}
		if got := p.Fetches(); got != 2 {
			t.Errorf("Fetches() = %d, want 2", got)
		}
	})

	t.Run("when lookups of one payload run concurrently, it is read once", func(t *testing.T) {
		t.Parallel()
		reg := releasetest.NewRegistry(t)
		pullSpec, digest := reg.PushRelease(t, "ocp/release:4.17.0", "4.17.0", testComponents)
		p := newTestProvider()
		var wg sync.WaitGroup
		results := make([]*ReleaseImage, 8)
		errs := make([]error, len(results))
		for i := range results {
			wg.Go(func() { results[i], errs[i] = p.Lookup(t.Context(), pullSpec, nil) })
		}
		wg.Wait()
		for i := range results {
			if errs[i] != nil || results[i].Digest != digest {
				t.Errorf("lookup %d returned %+v, %v; want digest %s", i, results[i], errs[i], digest)
			}
		}
		if got := p.Fetches(); got != 1 {
			t.Errorf("Fetches() = %d, want 1", got)
		}
	})

	t.Run("when the caller changes a result, later lookups are unaffected", func(t *testing.T) {
		t.Parallel()
		reg := releasetest.NewRegistry(t)
		pullSpec, _ := reg.PushRelease(t, "ocp/release:4.17.0", "4.17.0", testComponents)
		p := newTestProvider()
		mustLookup(t, p, pullSpec, nil).ComponentImages["etcd"] = "example.com/tampered"
		if got, _ := mustLookup(t, p, pullSpec, nil).ComponentImage("etcd"); got != testComponents["etcd"] {
			t.Errorf("etcd image = %q, want %q", got, testComponents["etcd"])
		}
	})

	t.Run("when a payload is cached, the caller's credentials are still checked", func(t *testing.T) {
		t.Parallel()
		reg := releasetest.NewRegistry(t, releasetest.WithBasicAuth("puller", "s3cret"))
		pullSpec, _ := reg.PushRelease(t, "ocp/release:4.17.0", "4.17.0", testComponents)
		p := newTestProvider()
		mustLookup(t, p, pullSpec, reg.DockerConfigJSON("puller", "s3cret"))
		_, err := p.Lookup(t.Context(), pullSpec, nil)
		checkError(t, err, ErrUnauthorized)
	})

	t.Run("when the same payload is named by tag and by digest, it is read once", func(t *testing.T) {
		t.Parallel()
		reg := releasetest.NewRegistry(t)
		pullSpec, digest := reg.PushRelease(t, "ocp/release:4.17.0", "4.17.0", testComponents)
		p := newTestProvider()
		mustLookup(t, p, pullSpec, nil)
		byDigest := mustLookup(t, p, reg.Host()+"/ocp/release@"+digest, nil)
		if byDigest.PullSpec != reg.Host()+"/ocp/release@"+digest {
			t.Errorf("PullSpec = %q, want the pull spec looked up", byDigest.PullSpec)
		}
		if got := p.Fetches(); got != 1 {
			t.Errorf("Fetches() = %d, want 1", got)
		}
	})
}

func TestLookupCacheSize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		cacheSize   int
		lookups     []string
		wantFetches int64
		wantCached  int
	}{
		{
			name:        "when the cache holds both payloads, going back to the first does not read it again",
			cacheSize:   2,
			lookups:     []string{"a", "b", "a", "b"},
			wantFetches: 2,
			wantCached:  2,
		},
		{
			name:        "when the cache is full, the least recently used payload is evicted",
			cacheSize:   2,
			lookups:     []string{"a", "b", "a", "c", "a", "b"},
			wantFetches: 4,
			wantCached:  2,
		},
		{
			name:        "when the cache holds one payload, alternating lookups read every time",
			cacheSize:   1,
			lookups:     []string{"a", "b", "a"},
			wantFetches: 3,
			wantCached:  1,
		},
		{
			name:        "when caching is disabled, every lookup reads the payload",
			cacheSize:   0,
			lookups:     []string{"a", "a", "a"},
			wantFetches: 3,
			wantCached:  0,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			reg := releasetest.NewRegistry(t)
			pullSpecs := map[string]string{}
			for i, tag := range []string{"a", "b", "c"} {
				pullSpecs[tag], _ = reg.PushRelease(t, "ocp/release:"+tag, "4.17."+string(rune('0'+i)), testComponents)
			}
			p := newTestProvider(WithCacheSize(tc.cacheSize))
			for _, tag := range tc.lookups {
				mustLookup(t, p, pullSpecs[tag], nil)
			}
			if got := p.Fetches(); got != tc.wantFetches {
				t.Errorf("Fetches() = %d, want %d", got, tc.wantFetches)
			}
			if got := p.cache.len(); got != tc.wantCached {
				t.Errorf("cached payloads = %d, want %d", got, tc.wantCached)
			}
		})
	}
}
