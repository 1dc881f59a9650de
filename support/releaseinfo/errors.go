package releaseinfo

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// classify wraps err, met while reading pullSpec from registry, in the
// sentinel error that tells the user what to fix, keeping err's detail.
// fallback is the sentinel for errors that are neither a registry response
// nor a network failure.
func classify(pullSpec, registry string, err, fallback error) error {
	prefix := "failed to read release image " + pullSpec
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s: timed out waiting for registry %s; check that the registry is reachable from the cluster and responding: %w: %w", prefix, registry, ErrUnreachable, err)
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("%s: lookup was cancelled before registry %s answered: %w: %w", prefix, registry, ErrUnreachable, err)
	}

	var terr *transport.Error
	if errors.As(err, &terr) {
		return classifyResponse(prefix, registry, terr, err)
	}
	if isTLSError(err) {
		return fmt.Errorf("%s: TLS handshake with registry %s failed; check that the registry's certificate is valid and trusted: %w: %w", prefix, registry, ErrUnreachable, err)
	}
	if strings.Contains(err.Error(), "server gave HTTP response to HTTPS client") {
		return fmt.Errorf("%s: registry %s serves plain HTTP, not HTTPS; configure it as an insecure registry or serve it over HTTPS: %w: %w", prefix, registry, ErrUnreachable, err)
	}
	if isNetworkError(err) {
		return fmt.Errorf("%s: could not connect to registry %s; check the registry host name and port, DNS, and any proxy or firewall between the cluster and the registry: %w: %w", prefix, registry, ErrUnreachable, err)
	}
	if errors.Is(fallback, ErrMalformed) {
		return fmt.Errorf("%s: %w: %w", prefix, ErrMalformed, err)
	}
	return fmt.Errorf("%s: could not talk to registry %s: %w: %w", prefix, registry, fallback, err)
}

func classifyResponse(prefix, registry string, terr *transport.Error, err error) error {
	status := fmt.Sprintf("HTTP %d %s", terr.StatusCode, http.StatusText(terr.StatusCode))
	switch kind := responseKind(terr); {
	case errors.Is(kind, ErrUnauthorized):
		return fmt.Errorf("%s: registry %s denied access (%s); check that the pull secret has credentials for %s that may pull this image, and that the image exists: %w: %w", prefix, registry, status, registry, ErrUnauthorized, err)
	case errors.Is(kind, ErrNotFound):
		return fmt.Errorf("%s: registry %s has no such image (%s); check the repository and the tag or digest in the pull spec: %w: %w", prefix, registry, status, ErrNotFound, err)
	case errors.Is(kind, ErrUnreachable):
		return fmt.Errorf("%s: registry %s is unavailable (%s); retry later or check the registry's status: %w: %w", prefix, registry, status, ErrUnreachable, err)
	default:
		return fmt.Errorf("%s: registry %s rejected the request (%s); check the pull spec: %w: %w", prefix, registry, status, ErrMalformed, err)
	}
}

// responseKind maps a registry's error response to a sentinel error.
func responseKind(terr *transport.Error) error {
	switch s := terr.StatusCode; {
	case s == http.StatusUnauthorized || s == http.StatusForbidden:
		return ErrUnauthorized
	case s == http.StatusNotFound:
		return ErrNotFound
	case s == http.StatusRequestTimeout || s == http.StatusTooManyRequests || s >= 500:
		return ErrUnreachable
	}
	for _, d := range terr.Errors {
		switch d.Code {
		case transport.UnauthorizedErrorCode, transport.DeniedErrorCode:
			return ErrUnauthorized
		case transport.ManifestUnknownErrorCode, transport.NameUnknownErrorCode, transport.BlobUnknownErrorCode:
			return ErrNotFound
		case transport.TooManyRequestsErrorCode, transport.UnavailableErrorCode:
			return ErrUnreachable
		}
	}
	return ErrMalformed
}

func isTLSError(err error) bool {
	var (
		unknownAuthority x509.UnknownAuthorityError
		hostname         x509.HostnameError
		invalid          x509.CertificateInvalidError
		verification     *tls.CertificateVerificationError
		header           tls.RecordHeaderError
	)
	return errors.As(err, &unknownAuthority) || errors.As(err, &hostname) ||
		errors.As(err, &invalid) || errors.As(err, &verification) || errors.As(err, &header)
}

func isNetworkError(err error) bool {
	var netErr net.Error
	return errors.As(err, &netErr) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed)
}

// isClassified reports whether err already wraps one of the sentinel errors.
func isClassified(err error) bool {
	return errors.Is(err, ErrUnreachable) || errors.Is(err, ErrUnauthorized) ||
		errors.Is(err, ErrNotFound) || errors.Is(err, ErrMalformed)
}
