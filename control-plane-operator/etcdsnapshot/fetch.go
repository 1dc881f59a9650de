package etcdsnapshot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

// Retry delays while the serving pod is not there yet.
const (
	firstRetryDelay = 500 * time.Millisecond
	maxRetryDelay   = 10 * time.Second
)

// fetcher downloads a snapshot from a serving pod.
type fetcher struct {
	url      string
	transfer *transfer
	client   *http.Client
	// timeout bounds the whole fetch, retries and transfer included.
	timeout time.Duration
}

// newFetcher is a fetcher of url with the transfer Secret t.
func newFetcher(url string, t *transfer, timeout time.Duration) (*fetcher, error) {
	tlsConfig, err := t.clientTLS()
	if err != nil {
		return nil, err
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = tlsConfig
	transport.Proxy = nil
	return &fetcher{url: url, transfer: t, client: &http.Client{Transport: transport}, timeout: timeout}, nil
}

// retryable marks an error that another attempt may not meet: the serving
// pod is not listening or not ready yet, or the transfer broke.
type retryable struct{ err error }

func (r *retryable) Error() string { return r.err.Error() }
func (r *retryable) Unwrap() error { return r.err }

// fetch downloads the snapshot into output, trying again while the
// failure is retryable and the timeout has not passed. output is never
// overwritten: when it exists and already holds the snapshot served (a
// retry of a transfer that finished), fetch succeeds without writing.
func (f *fetcher) fetch(ctx context.Context, output string) (Info, error) {
	log := ctrl.LoggerFrom(ctx)
	ctx, cancel := context.WithTimeoutCause(ctx, f.timeout, errFetchTimeout)
	defer cancel()
	delay := firstRetryDelay
	for {
		info, err := f.attempt(ctx, output)
		var again *retryable
		if err == nil || !errors.As(err, &again) {
			return info, err
		}
		if ctx.Err() != nil {
			return Info{}, f.stopped(ctx, err)
		}
		log.Info("Retrying the snapshot download", "url", f.url, "err", err.Error(), "retryIn", delay.String())
		select {
		case <-ctx.Done():
			return Info{}, f.stopped(ctx, err)
		case <-time.After(delay):
		}
		delay = min(2*delay, maxRetryDelay)
	}
}

// errFetchTimeout ends a fetch that passed its timeout.
var errFetchTimeout = errors.New("the fetch timed out")

// stopped is the error of a fetch whose context ended, after the last
// attempt failed with err: it timed out, or the process was stopped.
func (f *fetcher) stopped(ctx context.Context, err error) error {
	if errors.Is(context.Cause(ctx), errFetchTimeout) {
		return fmt.Errorf("gave up fetching the snapshot after %s: %w", f.timeout, err)
	}
	return fmt.Errorf("stopped while fetching the snapshot: %w", err)
}

// attempt makes one request, and writes the snapshot it gets to output.
func (f *fetcher) attempt(ctx context.Context, output string) (Info, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.url, nil)
	if err != nil {
		return Info{}, fmt.Errorf("invalid snapshot URL %q: %w", f.url, err)
	}
	req.Header.Set("Authorization", "Bearer "+f.transfer.token)
	resp, err := f.client.Do(req)
	if errors.Is(err, errNotPinned) {
		return Info{}, fmt.Errorf("refused the server at %s: it presented a certificate other than %s, the transfer Secret's", f.url, filepath.Join(f.transfer.dir, TransferCertKey))
	}
	if err != nil {
		return Info{}, &retryable{fmt.Errorf("failed to reach %s: %w", f.url, err)}
	}
	defer func() { _ = resp.Body.Close() }()
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		return Info{}, fmt.Errorf("the server at %s refused the transfer token (%s): the token in %s does not match the serving pod's", f.url, resp.Status, filepath.Join(f.transfer.dir, TransferTokenKey))
	case resp.StatusCode >= 500:
		return Info{}, &retryable{fmt.Errorf("the server at %s answered %s", f.url, resp.Status)}
	case resp.StatusCode != http.StatusOK:
		return Info{}, fmt.Errorf("the server at %s answered %s", f.url, resp.Status)
	}
	announced, err := announcedInfo(resp)
	if err != nil {
		return Info{}, fmt.Errorf("the server at %s: %w", f.url, err)
	}
	if done, err := alreadyReceived(output, announced); done || err != nil {
		if done {
			ctrl.LoggerFrom(ctx).Info("The snapshot was received before; nothing to write", "path", output, "sha256", announced.SHA256)
		}
		return announced, err
	}
	if err := receiveBody(resp.Body, output, announced); err != nil {
		return Info{}, fmt.Errorf("failed to receive the snapshot from %s into %s: %w", f.url, output, err)
	}
	return announced, nil
}

// announcedInfo reads the snapshot's Info from the response headers.
func announcedInfo(resp *http.Response) (Info, error) {
	info := Info{Size: resp.ContentLength, SHA256: resp.Header.Get(SHA256Header), Member: resp.Header.Get(MemberHeader)}
	if info.Size < 0 {
		return Info{}, errors.New("its response has no Content-Length")
	}
	if sum, err := hex.DecodeString(info.SHA256); err != nil || len(sum) != sha256.Size {
		return Info{}, fmt.Errorf("its response has no valid %s header (%q)", SHA256Header, info.SHA256)
	}
	revision, err := strconv.ParseInt(resp.Header.Get(RevisionHeader), 10, 64)
	if err != nil {
		return Info{}, fmt.Errorf("its response has no valid %s header: %w", RevisionHeader, err)
	}
	info.Revision = revision
	return info, nil
}

// alreadyReceived tells whether output exists and holds the snapshot
// announced; it fails when output holds anything else.
func alreadyReceived(output string, announced Info) (bool, error) {
	if _, err := os.Stat(output); errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	have, err := fileSHA256(output)
	if err != nil {
		return false, fmt.Errorf("failed to read the existing %s: %w", output, err)
	}
	if have != announced.SHA256 {
		return false, fmt.Errorf("refusing to overwrite %s: it holds another snapshot (sha256 %s, the server's is %s), and a backup is never rewritten", output, have, announced.SHA256)
	}
	return true, nil
}

// receiveBody writes body to output as announced: into output.partial,
// checked against the announced size and sha256, fsynced, then renamed to
// output and the directory fsynced. On any failure the partial file is
// removed; a transfer that broke is retryable, a body that does not match
// what was announced is not.
func receiveBody(body io.Reader, output string, announced Info) error {
	partial := output + ".partial"
	file, err := os.OpenFile(partial, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("failed to create %s: %w", partial, err)
	}
	fail := func(err error) error {
		_ = file.Close()
		_ = os.Remove(partial)
		return err
	}
	sum := sha256.New()
	n, err := io.Copy(io.MultiWriter(file, sum), body)
	if err != nil {
		return fail(&retryable{fmt.Errorf("the download broke after %d of %d bytes: %w", n, announced.Size, err)})
	}
	if n != announced.Size {
		return fail(fmt.Errorf("received %d bytes, the server announced %d", n, announced.Size))
	}
	if got := hex.EncodeToString(sum.Sum(nil)); got != announced.SHA256 {
		return fail(fmt.Errorf("the snapshot received is corrupt: its sha256 is %s, the server announced %s", got, announced.SHA256))
	}
	if err := file.Sync(); err != nil {
		return fail(fmt.Errorf("failed to fsync %s: %w", partial, err))
	}
	if err := file.Close(); err != nil {
		return fail(fmt.Errorf("failed to close %s: %w", partial, err))
	}
	if err := os.Rename(partial, output); err != nil {
		_ = os.Remove(partial)
		return fmt.Errorf("failed to rename %s to %s: %w", partial, output, err)
	}
	return syncDir(filepath.Dir(output))
}

// fileSHA256 is the hex sha256 of the file at path.
func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	sum := sha256.New()
	if _, err := io.Copy(sum, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(sum.Sum(nil)), nil
}

// syncDir fsyncs the directory at path, so that the entries renamed into
// it survive a crash.
func syncDir(path string) error {
	dir, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("failed to open directory %s to fsync it: %w", path, err)
	}
	defer func() { _ = dir.Close() }()
	if err := dir.Sync(); err != nil {
		return fmt.Errorf("failed to fsync directory %s: %w", path, err)
	}
	return nil
}
