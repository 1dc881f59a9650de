package releaseinfo

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hypershift-le/hypershift/support/releaseinfo/releasetest"
)

func TestLookupWithBasicAuth(t *testing.T) {
	t.Parallel()
	reg := releasetest.NewRegistry(t, releasetest.WithBasicAuth("puller", "s3cret"))
	pullSpec, digest := reg.PushRelease(t, "ocp/release:4.17.0", "4.17.0", testComponents)

	tests := []struct {
		name       string
		pullSecret []byte
		wantErr    error
	}{
		{
			name:       "when the pull secret holds the right credentials, it reads the payload",
			pullSecret: reg.DockerConfigJSON("puller", "s3cret"),
		},
		{
			name:       "when the pull secret gives username and password fields, it reads the payload",
			pullSecret: []byte(`{"auths":{"` + reg.Host() + `":{"username":"puller","password":"s3cret"}}}`),
		},
		{
			name:       "when the pull secret holds a wrong password, it is unauthorized",
			pullSecret: reg.DockerConfigJSON("puller", "wrong"),
			wantErr:    ErrUnauthorized,
		},
		{
			name:       "when there is no pull secret, it is unauthorized",
			pullSecret: nil,
			wantErr:    ErrUnauthorized,
		},
		{
			name:       "when the pull secret only has credentials for another registry, it is unauthorized",
			pullSecret: releasetest.DockerConfigJSON("quay.io", "puller", "s3cret"),
			wantErr:    ErrUnauthorized,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := newTestProvider().Lookup(t.Context(), pullSpec, tc.pullSecret)
			if tc.wantErr != nil {
				checkError(t, err, tc.wantErr, pullSpec, reg.Host(), "check that the pull secret", "401")
				return
			}
			if err != nil {
				t.Fatalf("Lookup failed: %v", err)
			}
			if got.Version != "4.17.0" || got.Digest != digest {
				t.Errorf("got version %q digest %q, want 4.17.0 %s", got.Version, got.Digest, digest)
			}
		})
	}
}

// hang makes the requests that match wait until the client gives up, the
// test ends, or 5s pass (after which they are served), so a client that
// ignores its context is slow but does not block the test forever.
func hang(t *testing.T, match func(*http.Request) bool) releasetest.Option {
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	return releasetest.WithMiddleware(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !match(r) {
				next.ServeHTTP(w, r)
				return
			}
			select {
			case <-r.Context().Done():
			case <-stop:
			case <-time.After(5 * time.Second):
				next.ServeHTTP(w, r)
			}
		})
	})
}

func everyRequest(*http.Request) bool { return true }

func blobDownloads(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/")
}

func TestLookupWhenTheRegistryCannotServe(t *testing.T) {
	t.Parallel()
	unavailable := releasetest.WithMiddleware(func(http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, `{"errors":[{"code":"UNAVAILABLE","message":"maintenance"}]}`, http.StatusServiceUnavailable)
		})
	})

	tests := []struct {
		name      string
		host      func(t *testing.T) string
		opts      []Option
		wantIs    []error
		wantMsgs  []string
		wantUnder time.Duration
	}{
		{
			name:     "when nothing listens on the registry's port, it is unreachable",
			host:     func(t *testing.T) string { return releasetest.UnreachableHost(t) },
			wantIs:   []error{ErrUnreachable},
			wantMsgs: []string{"could not connect to registry", "check the registry host name"},
		},
		{
			name:     "when the registry answers 503, it is unreachable",
			host:     func(t *testing.T) string { return releasetest.NewRegistry(t, unavailable).Host() },
			wantIs:   []error{ErrUnreachable},
			wantMsgs: []string{"is unavailable", "503"},
		},
		{
			name:      "when the registry does not answer within the timeout, it is unreachable",
			host:      func(t *testing.T) string { return releasetest.NewRegistry(t, hang(t, everyRequest)).Host() },
			opts:      []Option{WithTimeout(200 * time.Millisecond)},
			wantIs:    []error{ErrUnreachable, context.DeadlineExceeded},
			wantMsgs:  []string{"timed out"},
			wantUnder: 4 * time.Second,
		},
		{
			name: "when downloading the payload's layers outlasts the timeout, it is unreachable",
			host: func(t *testing.T) string {
				reg := releasetest.NewRegistry(t, hang(t, blobDownloads))
				reg.PushRelease(t, "ocp/release:4.17.0", "4.17.0", testComponents)
				return reg.Host()
			},
			opts:      []Option{WithTimeout(300 * time.Millisecond)},
			wantIs:    []error{ErrUnreachable, context.DeadlineExceeded},
			wantMsgs:  []string{"timed out"},
			wantUnder: 4 * time.Second,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			host := tc.host(t)
			pullSpec := host + "/ocp/release:4.17.0"
			start := time.Now()
			_, err := newTestProvider(tc.opts...).Lookup(t.Context(), pullSpec, nil)
			checkError(t, err, tc.wantIs[0], append(tc.wantMsgs, pullSpec, host)...)
			for _, want := range tc.wantIs[1:] {
				if !errors.Is(err, want) {
					t.Errorf("expected the error to wrap %v, got: %v", want, err)
				}
			}
			if elapsed := time.Since(start); tc.wantUnder > 0 && elapsed > tc.wantUnder {
				t.Errorf("Lookup took %s, want under %s", elapsed, tc.wantUnder)
			}
		})
	}
}

func TestLookupRespectsTheContext(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		cancel func(cancel context.CancelFunc)
	}{
		{
			name:   "when the context is cancelled during the lookup, it returns promptly",
			cancel: func(cancel context.CancelFunc) { time.AfterFunc(100*time.Millisecond, cancel) },
		},
		{
			name:   "when the context is already cancelled, it returns promptly",
			cancel: func(cancel context.CancelFunc) { cancel() },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			reg := releasetest.NewRegistry(t, hang(t, everyRequest))
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			tc.cancel(cancel)

			start := time.Now()
			_, err := newTestProvider().Lookup(ctx, reg.Host()+"/ocp/release:4.17.0", nil)
			if elapsed := time.Since(start); elapsed > 5*time.Second {
				t.Errorf("Lookup took %s after cancellation, want it prompt", elapsed)
			}
			checkError(t, err, ErrUnreachable, "cancelled")
			if !errors.Is(err, context.Canceled) {
				t.Errorf("expected the error to wrap context.Canceled, got: %v", err)
			}
		})
	}
}

func TestLookupInsecureRegistries(t *testing.T) {
	t.Parallel()
	reg := releasetest.NewRegistry(t)
	_, digest := reg.PushRelease(t, "ocp/release:4.17.0", "4.17.0", testComponents)
	// Every connection goes to the test registry, whatever host it names.
	toRegistry := &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, reg.Host())
		},
	}
	const pullSpec = "releases.example.test:5000/ocp/release:4.17.0"

	tests := []struct {
		name    string
		opts    []Option
		wantErr error
	}{
		{
			name: "when the registry is listed as insecure with its port, it is read over plain HTTP",
			opts: []Option{WithInsecureRegistries("releases.example.test:5000")},
		},
		{
			name: "when the registry's host name is listed as insecure, it is read over plain HTTP",
			opts: []Option{WithInsecureRegistries("Releases.Example.Test")},
		},
		{
			name:    "when a plain HTTP registry is not listed as insecure, it is unreachable",
			opts:    []Option{WithInsecureRegistries("other.example.test")},
			wantErr: ErrUnreachable,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			provider := newTestProvider(append(tc.opts, WithTransport(toRegistry))...)
			got, err := provider.Lookup(t.Context(), pullSpec, nil)
			if tc.wantErr != nil {
				checkError(t, err, tc.wantErr, "plain HTTP", "releases.example.test:5000")
				return
			}
			if err != nil {
				t.Fatalf("Lookup failed: %v", err)
			}
			if got.Digest != digest || got.PullSpec != pullSpec {
				t.Errorf("got digest %q pull spec %q, want %q %q", got.Digest, got.PullSpec, digest, pullSpec)
			}
		})
	}
}

func TestLookupErrorsDoNotLeakCredentials(t *testing.T) {
	t.Parallel()
	reg := releasetest.NewRegistry(t, releasetest.WithBasicAuth("puller", "s3cret"))
	pullSpec, _ := reg.PushRelease(t, "ocp/release:4.17.0", "4.17.0", testComponents)
	_, err := newTestProvider().Lookup(t.Context(), pullSpec, reg.DockerConfigJSON("puller", "wr0ng-pa55"))
	if err == nil {
		t.Fatal("expected an error with a wrong password")
	}
	if strings.Contains(err.Error(), "wr0ng-pa55") {
		t.Errorf("error reveals the password: %v", err)
	}
}
