package kubeapiserver

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hypershift-le/hypershift/control-plane-operator/pki"
	"github.com/hypershift-le/hypershift/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, testenv.Options{SkipAdmissionPolicies: true}, &env))
}

// TestReadyAgainstARealKubeAPIServer asks the test control plane's
// kube-apiserver, which serves with a CA of its own.
func TestReadyAgainstARealKubeAPIServer(t *testing.T) {
	otherCA := mustOtherCA(t)
	server := "https://" + strings.TrimPrefix(env.Config.Host, "https://")
	tests := []struct {
		name    string
		url     string
		ca      []byte
		wantErr bool
	}{
		{name: "when it serves with the CA given, it is ready", url: server, ca: env.Config.CAData},
		{name: "when it serves with another CA, it is not trusted", url: server, ca: otherCA, wantErr: true},
		{name: "when nothing listens at the endpoint, it is not ready", url: "https://127.0.0.1:1", ca: env.Config.CAData, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Ready(t.Context(), tt.url, tt.ca)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Ready = %v, want error %v", err, tt.wantErr)
			}
		})
	}
}

func mustOtherCA(t *testing.T) []byte {
	t.Helper()
	result, err := pki.Plan(pki.Inputs{Namespace: "x"}, nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return result.Secrets[0].Data[pki.CACertKey]
}
