// Package releasetest serves OpenShift release payloads from an in-process
// container registry on 127.0.0.1 (plain HTTP, optionally behind basic
// auth), so tests can exercise code that reads release images without any
// outside network. NewRegistry serves one test; Start serves a process
// without a test (the local cluster).
package releasetest

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

const (
	// ImageReferencesFile is the payload file naming the component images.
	ImageReferencesFile = "release-manifests/image-references"
	// ReleaseMetadataFile is the payload file carrying the release version.
	ReleaseMetadataFile = "release-manifests/release-metadata"
)

// Registry is a container registry served on 127.0.0.1.
type Registry struct {
	server     *http.Server
	host       string
	user       string
	password   string
	middleware []func(http.Handler) http.Handler
	blobDir    string
}

// Option configures a Registry.
type Option func(*Registry)

// WithBasicAuth makes the registry demand basic auth with user and password:
// a request without them, or with others, gets 401 and a
// WWW-Authenticate: Basic challenge.
func WithBasicAuth(user, password string) Option {
	return func(r *Registry) {
		r.user, r.password = user, password
	}
}

// WithMiddleware wraps the registry's handler, outermost last, e.g. to fail
// or delay requests. It applies to pushes too.
func WithMiddleware(mw func(http.Handler) http.Handler) Option {
	return func(r *Registry) {
		r.middleware = append(r.middleware, mw)
	}
}

// WithBlobDir keeps the registry's blobs in dir instead of memory: for
// images of hundreds of megabytes.
func WithBlobDir(dir string) Option {
	return func(r *Registry) {
		r.blobDir = dir
	}
}

// NewRegistry starts a registry on a free port that is stopped when t
// ends.
func NewRegistry(t testing.TB, opts ...Option) *Registry {
	t.Helper()
	r, err := Start("127.0.0.1:0", opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// Start serves a registry on address (host:port; port 0 picks a free one)
// until Close.
func Start(address string, opts ...Option) (*Registry, error) {
	r := &Registry{}
	for _, opt := range opts {
		opt(r)
	}
	ropts := []registry.Option{registry.Logger(log.New(io.Discard, "", 0))}
	if r.blobDir != "" {
		if err := os.MkdirAll(r.blobDir, 0o700); err != nil {
			return nil, fmt.Errorf("failed to create the registry's blob directory: %w", err)
		}
		ropts = append(ropts, registry.WithBlobHandler(registry.NewDiskBlobHandler(r.blobDir)))
	}
	handler := registry.New(ropts...)
	if r.user != "" || r.password != "" {
		handler = r.basicAuth(handler)
	}
	for _, mw := range r.middleware {
		handler = mw(handler)
	}
	l, err := net.Listen("tcp", address)
	if err != nil {
		return nil, fmt.Errorf("failed to listen for the registry on %s: %w", address, err)
	}
	r.host = l.Addr().String()
	if addr, ok := l.Addr().(*net.TCPAddr); ok && addr.IP.IsUnspecified() {
		// Listening on every address: this machine reaches it on loopback.
		r.host = net.JoinHostPort("127.0.0.1", strconv.Itoa(addr.Port))
	}
	r.server = &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.server.Serve(l) }()
	return r, nil
}

// Close stops the registry, closing its connections.
func (r *Registry) Close() error {
	return r.server.Close()
}

// BlobDir is the directory of the registry's blobs (WithBlobDir), ""
// when they are in memory. A file at BlobDir/<algorithm>/<hex> with that
// digest is a blob the registry serves: an image whose layers are written
// there is pushed without uploading them.
func (r *Registry) BlobDir() string {
	return r.blobDir
}

// Host returns the registry's host:port, e.g. 127.0.0.1:40123.
func (r *Registry) Host() string {
	return r.host
}

// DockerConfigJSON returns a kubernetes.io/dockerconfigjson pull secret
// holding user and password for this registry.
func (r *Registry) DockerConfigJSON(user, password string) []byte {
	return DockerConfigJSON(r.Host(), user, password)
}

// DockerConfigJSON returns a kubernetes.io/dockerconfigjson pull secret
// holding user and password for host.
func DockerConfigJSON(host, user, password string) []byte {
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	data, err := json.Marshal(map[string]any{
		"auths": map[string]any{host: map[string]string{"auth": auth}},
	})
	if err != nil {
		panic(err) // marshalling strings cannot fail
	}
	return data
}

// PushRelease pushes a release payload of the given version naming the given
// component images (tag name -> pull spec) as repoTag, e.g.
// "ocp-release:4.17.0", and returns its pull spec and manifest digest.
func (r *Registry) PushRelease(t testing.TB, repoTag, version string, components map[string]string) (pullSpec, digest string) {
	t.Helper()
	pullSpec, digest, err := r.PushReleaseContext(t.Context(), repoTag, version, components)
	if err != nil {
		t.Fatal(err)
	}
	return pullSpec, digest
}

// PushImage pushes a single-layer image holding files (path -> content) as
// repoTag and returns its pull spec and manifest digest.
func (r *Registry) PushImage(t testing.TB, repoTag string, files map[string][]byte) (pullSpec, digest string) {
	t.Helper()
	return r.PushLayers(t, repoTag, files)
}

// PushLayers pushes an image with one layer per element of layers, oldest
// first, and returns its pull spec and manifest digest. A file named
// ".wh.<name>" whites out <name> from older layers.
func (r *Registry) PushLayers(t testing.TB, repoTag string, layers ...map[string][]byte) (pullSpec, digest string) {
	t.Helper()
	pullSpec, digest, err := r.PushLayersContext(t.Context(), repoTag, layers...)
	if err != nil {
		t.Fatal(err)
	}
	return pullSpec, digest
}

// PushLayersContext is PushLayers outside a test.
func (r *Registry) PushLayersContext(ctx context.Context, repoTag string, layers ...map[string][]byte) (pullSpec, digest string, err error) {
	img, err := BuildImage(layers...)
	if err != nil {
		return "", "", err
	}
	var auth authn.Authenticator
	if r.user != "" || r.password != "" {
		auth = &authn.Basic{Username: r.user, Password: r.password}
	}
	ref := r.Host() + "/" + repoTag
	if digest, err = Push(ctx, ref, img, auth); err != nil {
		return "", "", err
	}
	parsed, err := name.ParseReference(ref)
	if err != nil {
		return "", "", err
	}
	return parsed.String(), digest, nil
}

// PushReleaseContext is PushRelease outside a test.
func (r *Registry) PushReleaseContext(ctx context.Context, repoTag, version string, components map[string]string) (pullSpec, digest string, err error) {
	files, err := BuildReleaseFiles(version, components)
	if err != nil {
		return "", "", err
	}
	return r.PushLayersContext(ctx, repoTag, files)
}

// ReleaseFiles returns the release-manifests files of a payload: an
// image-references ImageStream named version whose tags name components
// (tag name -> pull spec), and release-metadata carrying version.
func ReleaseFiles(t testing.TB, version string, components map[string]string) map[string][]byte {
	t.Helper()
	files, err := BuildReleaseFiles(version, components)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// UnreachableHost returns a 127.0.0.1 host:port that nothing listens on.
func UnreachableHost(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("failed to listen: %v", err)
	}
	host := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatalf("failed to close listener: %v", err)
	}
	return host
}

func (r *Registry) basicAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		user, password, ok := req.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(user), []byte(r.user)) != 1 ||
			subtle.ConstantTimeCompare([]byte(password), []byte(r.password)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="releasetest"`)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
			return
		}
		next.ServeHTTP(w, req)
	})
}

// tarLayer builds a gzipped tar layer holding files, with their parent
// directories, in a stable order.
func tarLayer(files map[string][]byte) (v1.Layer, error) {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	for _, n := range names {
		var parents []string
		for dir := path.Dir(n); dir != "." && dir != "/" && !dirs[dir]; dir = path.Dir(dir) {
			dirs[dir] = true
			parents = append(parents, dir)
		}
		for i := len(parents) - 1; i >= 0; i-- {
			if err := tw.WriteHeader(&tar.Header{Name: parents[i] + "/", Typeflag: tar.TypeDir, Mode: 0o755}); err != nil {
				return nil, err
			}
		}
		if err := tw.WriteHeader(&tar.Header{Name: n, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(files[n]))}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(files[n]); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	})
}
