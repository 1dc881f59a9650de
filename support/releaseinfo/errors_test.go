package releaseinfo

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	const (
		pullSpec = "quay.io/openshift-release-dev/ocp-release:4.17.0"
		registry = "quay.io"
	)
	diagnostic := func(status int, code transport.ErrorCode) error {
		return &transport.Error{StatusCode: status, Errors: []transport.Diagnostic{{Code: code, Message: "from the registry"}}}
	}
	dial := func(err error) error {
		return &url.Error{Op: "Get", URL: "https://quay.io/v2/", Err: &net.OpError{Op: "dial", Net: "tcp", Err: err}}
	}

	tests := []struct {
		name     string
		err      error
		fallback error
		want     error
		wantMsg  string
	}{
		{name: "when the registry answers 401, it is unauthorized", err: &transport.Error{StatusCode: 401}, want: ErrUnauthorized, wantMsg: "check that the pull secret has credentials for quay.io"},
		{name: "when the registry answers 403, it is unauthorized", err: &transport.Error{StatusCode: 403}, want: ErrUnauthorized, wantMsg: "HTTP 403 Forbidden"},
		{name: "when the registry answers DENIED with a 400, it is unauthorized", err: diagnostic(400, transport.DeniedErrorCode), want: ErrUnauthorized},
		{name: "when the registry answers 404, it is not found", err: &transport.Error{StatusCode: 404}, want: ErrNotFound, wantMsg: "check the repository and the tag or digest"},
		{name: "when the registry answers MANIFEST_UNKNOWN, it is not found", err: diagnostic(400, transport.ManifestUnknownErrorCode), want: ErrNotFound},
		{name: "when the registry answers NAME_UNKNOWN, it is not found", err: diagnostic(400, transport.NameUnknownErrorCode), want: ErrNotFound},
		{name: "when the registry answers 500, it is unreachable", err: &transport.Error{StatusCode: 500}, want: ErrUnreachable, wantMsg: "retry later"},
		{name: "when the registry answers 502, it is unreachable", err: &transport.Error{StatusCode: 502}, want: ErrUnreachable},
		{name: "when the registry rate-limits with 429, it is unreachable", err: &transport.Error{StatusCode: 429}, want: ErrUnreachable},
		{name: "when the registry answers another 4xx, the request is malformed", err: diagnostic(400, transport.NameInvalidErrorCode), want: ErrMalformed, wantMsg: "check the pull spec"},
		{name: "when the connection is refused, it is unreachable", err: dial(syscall.ECONNREFUSED), want: ErrUnreachable, wantMsg: "could not connect to registry quay.io"},
		{name: "when the host name does not resolve, it is unreachable", err: dial(&net.DNSError{Err: "no such host", Name: "quay.io", IsNotFound: true}), want: ErrUnreachable, wantMsg: "DNS"},
		{name: "when the connection times out, it is unreachable", err: dial(os.ErrDeadlineExceeded), want: ErrUnreachable},
		{name: "when the certificate is not trusted, it is unreachable", err: &url.Error{Op: "Get", URL: "https://quay.io/v2/", Err: x509.UnknownAuthorityError{}}, want: ErrUnreachable, wantMsg: "certificate"},
		{name: "when the lookup times out, it is unreachable", err: fmt.Errorf("waiting: %w", context.DeadlineExceeded), want: ErrUnreachable, wantMsg: "timed out"},
		{name: "when the lookup is cancelled, it is unreachable", err: context.Canceled, want: ErrUnreachable, wantMsg: "cancelled"},
		{name: "when reading the payload fails otherwise, it is malformed", err: errors.New("gzip: invalid header"), fallback: ErrMalformed, want: ErrMalformed, wantMsg: "gzip: invalid header"},
		{name: "when talking to the registry fails otherwise, it is unreachable", err: errors.New("something odd"), fallback: ErrUnreachable, want: ErrUnreachable, wantMsg: "something odd"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fallback := tc.fallback
			if fallback == nil {
				fallback = ErrUnreachable
			}
			got := classify(pullSpec, registry, tc.err, fallback)
			checkError(t, got, tc.want, "failed to read release image "+pullSpec, tc.wantMsg)
			if !errors.Is(got, tc.err) {
				t.Errorf("classified error does not wrap the original %v: %v", tc.err, got)
			}
		})
	}
}
