package podnetwork

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestServicesProgrammed: the first CNI configuration waits for kube-proxy
// to say it has programmed the Services, and says why it waits.
func TestServicesProgrammed(t *testing.T) {
	healthy := false
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if !healthy {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer proxy.Close()
	a := &Agent{ServiceProxyHealthz: proxy.URL}
	if err := a.servicesProgrammed(); !errors.Is(err, errNotYet) {
		t.Errorf("kube-proxy not synced yet: %v, want a wait", err)
	}
	healthy = true
	if err := a.servicesProgrammed(); err != nil {
		t.Errorf("kube-proxy healthy: %v", err)
	}
	proxy.Close()
	if err := a.servicesProgrammed(); !errors.Is(err, errNotYet) {
		t.Errorf("no kube-proxy: %v, want a wait", err)
	}
}
