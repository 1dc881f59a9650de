package nodeagent_test

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// syncLog collects the agent's log for failure messages.
type syncLog struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *syncLog) write(prefix, args string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(&l.buf, "%s %s %s\n", time.Now().Format("15:04:05.000"), prefix, args)
}

func (l *syncLog) tail(n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.buf.String()
	if len(s) > n {
		s = "..." + s[len(s)-n:]
	}
	return s
}

// writeCounter counts the agent's writes (PUT, POST, PATCH, DELETE) by
// request path.
type writeCounter struct {
	mu     sync.Mutex
	counts map[string]int
}

func (w *writeCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		if req.Method != http.MethodGet {
			w.mu.Lock()
			w.counts[req.Method+" "+req.URL.Path]++
			w.mu.Unlock()
		}
		return rt.RoundTrip(req)
	})
}

// count returns how many requests of method went to path.
func (w *writeCounter) count(method, path string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.counts[method+" "+path]
}

// statusWrites returns how many times the agent wrote a pod's status.
func (w *writeCounter) statusWrites(ns, name string) int {
	return w.count(http.MethodPut, fmt.Sprintf("/api/v1/namespaces/%s/pods/%s/status", ns, name))
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// get fetches url, trusting any certificate.
func get(url string) (int, string, error) {
	c := &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // the test server's certificate is self-signed
	}
	resp, err := c.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}
