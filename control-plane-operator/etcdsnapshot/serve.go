package etcdsnapshot

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
)

// shutdownTimeout bounds the wait for downloads still under way once the
// last expected one completed.
const shutdownTimeout = 30 * time.Second

// server serves one snapshot file until it was downloaded a number of
// times.
type server struct {
	path      string
	info      Info
	transfer  *transfer
	downloads int64
	log       logr.Logger

	completed atomic.Int64
	done      chan struct{}
	doneOnce  sync.Once
}

// serveSnapshot serves the snapshot at path, described by info, on listen
// with the transfer certificate, until it was downloaded downloads times
// in whole (then it returns nil) or ctx ends (then it fails, saying how
// many downloads completed).
func serveSnapshot(ctx context.Context, listen string, t *transfer, path string, info Info, downloads int) error {
	tlsConfig, err := t.serverTLS()
	if err != nil {
		return err
	}
	s := &server{path: path, info: info, transfer: t, downloads: int64(downloads), log: ctrl.LoggerFrom(ctx), done: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+HealthzPath, func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	mux.HandleFunc("GET "+SnapshotPath, s.download)
	srv := &http.Server{Handler: mux, TLSConfig: tlsConfig, ReadHeaderTimeout: 10 * time.Second}

	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("failed to listen on %s: %w", listen, err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(tls.NewListener(ln, tlsConfig)) }()
	s.log.Info("Serving the snapshot", "address", ln.Addr().String(), "path", path, "revision", info.Revision, "bytes", info.Size, "sha256", info.SHA256, "downloads", downloads)

	select {
	case <-s.done:
		shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
		defer cancel()
		if err := srv.Shutdown(shutdownCtx); err != nil {
			s.log.Info("Stopped without waiting for the downloads still under way", "err", err.Error())
		}
		return nil
	case <-ctx.Done():
		_ = srv.Close()
		return fmt.Errorf("stopped after %d of %d downloads", s.completed.Load(), downloads)
	case err := <-served:
		return fmt.Errorf("failed to serve the snapshot: %w", err)
	}
}

// download streams the snapshot to an authenticated client, and counts
// the download when the whole body was written.
func (s *server) download(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	if !s.transfer.authorized(r.Header.Get("Authorization")) {
		s.log.Info("Refused a download without the transfer token", "remoteAddr", r.RemoteAddr)
		w.Header().Set("WWW-Authenticate", "Bearer")
		http.Error(w, "the transfer token does not match", http.StatusUnauthorized)
		return
	}
	f, err := os.Open(s.path)
	if err != nil {
		s.log.Error(err, "Failed to open the snapshot for a download", "remoteAddr", r.RemoteAddr)
		http.Error(w, "failed to open the snapshot", http.StatusInternalServerError)
		return
	}
	defer func() { _ = f.Close() }()
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Length", strconv.FormatInt(s.info.Size, 10))
	h.Set(SHA256Header, s.info.SHA256)
	h.Set(RevisionHeader, strconv.FormatInt(s.info.Revision, 10))
	if s.info.Member != "" {
		h.Set(MemberHeader, s.info.Member)
	}
	if r.Method == http.MethodHead {
		return
	}
	n, err := io.Copy(w, io.LimitReader(f, s.info.Size))
	if err == nil && n != s.info.Size {
		err = fmt.Errorf("the snapshot file ended after %d of %d bytes", n, s.info.Size)
	}
	if err == nil {
		err = http.NewResponseController(w).Flush()
	}
	if err != nil {
		s.log.Info("Download failed", "remoteAddr", r.RemoteAddr, "bytes", n, "duration", time.Since(start).String(), "err", err.Error())
		return
	}
	completed := s.completed.Add(1)
	s.log.Info("Download complete", "remoteAddr", r.RemoteAddr, "bytes", n, "duration", time.Since(start).String(), "completed", completed, "expected", s.downloads)
	if completed >= s.downloads {
		s.doneOnce.Do(func() { close(s.done) })
	}
}
