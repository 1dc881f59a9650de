package releasetest

import (
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
)

func TestBasicAuth(t *testing.T) {
	t.Parallel()
	reg := NewRegistry(t, WithBasicAuth("puller", "s3cret"))
	tests := []struct {
		name          string
		user          string
		password      string
		withAuth      bool
		wantStatus    int
		wantChallenge bool
	}{
		{name: "when the request has no credentials, it is challenged", wantStatus: http.StatusUnauthorized, wantChallenge: true},
		{name: "when the request has a wrong password, it is challenged", user: "puller", password: "wrong", withAuth: true, wantStatus: http.StatusUnauthorized, wantChallenge: true},
		{name: "when the request has the right credentials, it is served", user: "puller", password: "s3cret", withAuth: true, wantStatus: http.StatusOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+reg.Host()+"/v2/", nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.withAuth {
				req.SetBasicAuth(tc.user, tc.password)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("GET /v2/ failed: %v", err)
			}
			defer func() { _ = resp.Body.Close() }()
			if resp.StatusCode != tc.wantStatus {
				t.Errorf("status = %d, want %d", resp.StatusCode, tc.wantStatus)
			}
			challenge := resp.Header.Get("WWW-Authenticate")
			if got := strings.HasPrefix(challenge, "Basic realm="); got != tc.wantChallenge {
				t.Errorf("WWW-Authenticate = %q, want a Basic challenge: %v", challenge, tc.wantChallenge)
			}
		})
	}
}

func TestDockerConfigJSON(t *testing.T) {
	t.Parallel()
	reg := NewRegistry(t)
	var config struct {
		Auths map[string]struct {
			Auth string `json:"auth"`
		} `json:"auths"`
	}
	if err := json.Unmarshal(reg.DockerConfigJSON("puller", "s3cret"), &config); err != nil {
		t.Fatalf("DockerConfigJSON is not JSON: %v", err)
	}
	decoded, err := base64.StdEncoding.DecodeString(config.Auths[reg.Host()].Auth)
	if err != nil || string(decoded) != "puller:s3cret" {
		t.Errorf("auth for %s decodes to %q, %v; want puller:s3cret", reg.Host(), decoded, err)
	}
}

func TestUnreachableHost(t *testing.T) {
	t.Parallel()
	host := UnreachableHost(t)
	if !strings.HasPrefix(host, "127.0.0.1:") {
		t.Errorf("UnreachableHost() = %q, want a 127.0.0.1 address", host)
	}
	if conn, err := net.Dial("tcp", host); err == nil {
		_ = conn.Close()
		t.Errorf("connecting to %s succeeded, want it refused", host)
	}
}
