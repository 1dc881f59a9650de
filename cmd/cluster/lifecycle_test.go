package cluster

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/releaseinfo/releasetest"
)

// TestCreateRefusesBadInputLocally: input the API server would refuse is
// refused before the CLI reads the kubeconfig (none is given here).
func TestCreateRefusesBadInputLocally(t *testing.T) {
	good := pullSecretFile(t, `{"auths":{}}`)
	long := strings.Repeat("a", 55)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "when the pull secret is not JSON", args: []string{"--name=a", "--pull-secret=" + pullSecretFile(t, "user:password")}, want: "--pull-secret is not a .dockerconfigjson file"},
		{name: "when the pull secret has no auths", args: []string{"--name=a", "--pull-secret=" + pullSecretFile(t, `{"credsStore":"x"}`)}, want: `--pull-secret has no "auths" object`},
		{name: "when the name is not a valid object name", args: []string{"--name=Demo_1", "--pull-secret=" + good}, want: `invalid --name "Demo_1"`},
		{name: "when the namespace is not a DNS label", args: []string{"--name=a", "--namespace=a.b", "--pull-secret=" + good}, want: `invalid --namespace "a.b"`},
		{name: "when the control-plane namespace would be too long", args: []string{"--name=" + long, "--pull-secret=" + good},
			want: "would be 64 characters long, more than the 63 a namespace name may have; use a name of at most 54 characters in namespace clusters"},
		{name: "when --render and --wait are both set", args: []string{"--name=a", "--pull-secret=" + good, "--render", "--wait"}, want: "--render prints the objects and creates nothing"},
		{name: "when --render has no address to publish the kube-apiserver at", args: []string{"--name=a", "--pull-secret=" + good, "--render"},
			want: "--render needs --external-api-server-address: it reads no node of the management cluster, and a HostedCluster must publish its kube-apiserver"},
		{name: "when the node port is no port", args: []string{"--name=a", "--pull-secret=" + good, "--external-api-server-port=70000"}, want: "invalid --external-api-server-port 70000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"cluster", "none", "--release-image=quay.io/x/y:1", "--kubeconfig=/does/not/exist"}, tt.args...)
			_, err := execute(t.Context(), NewCreateCommand, args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// TestCreateRenderLeavesThePullSecretOut: --render prints no Secret
// unless --render-sensitive; a dotted name gets an infraID that is a DNS
// label.
func TestCreateRenderLeavesThePullSecretOut(t *testing.T) {
	args := []string{"cluster", "none", "--name=demo.v2", "--release-image=quay.io/x/y:1", "--pull-secret=" + pullSecretFile(t, `{"auths":{"r":{"auth":"c2VjcmV0"}}}`), "--render", "--external-api-server-address=api.example.com"}
	out, err := execute(t.Context(), NewCreateCommand, args...)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "kind: Secret") || strings.Contains(out, "c2VjcmV0") {
		t.Errorf("--render printed the pull secret:\n%s", out)
	}
	if !strings.Contains(out, "infraID: demo-v2-") || !strings.Contains(out, "name: demo.v2-pull-secret") {
		t.Errorf("the HostedCluster is not rendered as expected:\n%s", out)
	}
	out, err = execute(t.Context(), NewCreateCommand, append(args, "--render-sensitive")...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "kind: Secret") || !strings.Contains(out, hyperv1.SafeToDeleteWithClusterLabel+`: "true"`) {
		t.Errorf("--render-sensitive did not print the labelled pull secret:\n%s", out)
	}
}

// TestCreateLeavesNothingWhenRefused: a HostedCluster the API server
// refuses (an infraID its CEL rule rejects) leaves no namespace, Secret or
// HostedCluster behind; an existing namespace stays.
func TestCreateLeavesNothingWhenRefused(t *testing.T) {
	kubeconfig, err := env.AddUserKubeconfig("cli-refused", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	existing := env.Namespace(t)
	for _, ns := range []string{"clusters-refused", existing} {
		t.Run(ns, func(t *testing.T) {
			_, err := execute(t.Context(), NewCreateCommand, "cluster", "none", "--kubeconfig="+kubeconfig, "--name=bad", "--namespace="+ns,
				"--release-image=quay.io/x/y:1", "--pull-secret="+pullSecretFile(t, `{"auths":{}}`), "--infra-id=Bad_ID", "--external-api-server-address=127.0.0.1")
			if err == nil || !strings.Contains(err.Error(), "the API server refused HostedCluster "+ns+"/bad") || !strings.Contains(err.Error(), "must consist of lowercase letters") {
				t.Fatalf("got %v", err)
			}
			assertNotCreated(t, ns, "bad")
			namespace := &corev1.Namespace{}
			err = env.Client.Get(t.Context(), client.ObjectKey{Name: ns}, namespace)
			if ns == existing {
				if err != nil || !namespace.DeletionTimestamp.IsZero() {
					t.Errorf("the existing namespace was touched: %v %v", err, namespace.DeletionTimestamp)
				}
			} else if err == nil && namespace.DeletionTimestamp.IsZero() {
				t.Errorf("namespace %s, created for the refused cluster, was left behind", ns)
			}
		})
	}
}

// TestPullSecretLifecycle: create cluster labels the pull secret it
// creates, updates one it created before with new credentials, leaves a
// user's Secret alone; destroy cluster deletes only the one it created.
func TestPullSecretLifecycle(t *testing.T) {
	kubeconfig, err := env.AddUserKubeconfig("cli-pull-secrets", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	ns := env.Namespace(t)
	secret := func(name string) *corev1.Secret {
		t.Helper()
		s := &corev1.Secret{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	create := func(name, credentials string) string {
		t.Helper()
		out, err := execute(t.Context(), NewCreateCommand, "cluster", "none", "--kubeconfig="+kubeconfig, "--name="+name, "--namespace="+ns,
			"--release-image=quay.io/x/y:1", "--pull-secret="+pullSecretFile(t, credentials), "--external-api-server-address=127.0.0.1")
		if err != nil {
			t.Fatalf("create %s: %v\n%s", name, err, out)
		}
		return out
	}
	destroy := func(name string) string {
		t.Helper()
		out, err := execute(t.Context(), NewDestroyCommand, "cluster", "--kubeconfig="+kubeconfig, "--name="+name, "--namespace="+ns)
		if err != nil {
			t.Fatalf("destroy %s: %v\n%s", name, err, out)
		}
		return out
	}
	oldCreds, newCreds := string(releasetest.DockerConfigJSON("r", "u", "old")), string(releasetest.DockerConfigJSON("r", "u", "new"))

	out := create("one", oldCreds)
	if s := secret("one-pull-secret"); s.Labels[hyperv1.SafeToDeleteWithClusterLabel] != "true" || string(s.Data[corev1.DockerConfigJsonKey]) != oldCreds {
		t.Fatalf("the created pull secret is %v %q\n%s", s.Labels, s.Data, out)
	}
	// Left behind by an older CLI, say: the next create updates it.
	if err := env.Client.Delete(t.Context(), &hyperv1.HostedCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "one"}}); err != nil {
		t.Fatal(err)
	}
	out = create("one", newCreds)
	if s := secret("one-pull-secret"); string(s.Data[corev1.DockerConfigJsonKey]) != newCreds || !strings.Contains(out, "updated with the credentials of --pull-secret") {
		t.Errorf("the pull secret was not updated: %q\n%s", s.Data, out)
	}

	mine := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "two-pull-secret"}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(oldCreds)}}
	if err := env.Client.Create(t.Context(), mine); err != nil {
		t.Fatal(err)
	}
	out = create("two", newCreds)
	if s := secret("two-pull-secret"); string(s.Data[corev1.DockerConfigJsonKey]) != oldCreds || !strings.Contains(out, "was not created by hypershift: left as it is") {
		t.Errorf("the user's Secret was changed: %q\n%s", s.Data, out)
	}

	for name, wantGone := range map[string]bool{"one": true, "two": false} {
		out := destroy(name)
		err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name + "-pull-secret"}, &corev1.Secret{})
		if gone := apierrors.IsNotFound(err); gone != wantGone {
			t.Errorf("destroy %s: pull secret gone %t, want %t (%v)\n%s", name, gone, wantGone, err, out)
		}
	}
}

// TestCreateWaitStopsAtATerminalCondition: --wait ends, well before its
// timeout, with the condition's message when the release image does not
// exist: waiting cannot fix it.
func TestCreateWaitStopsAtATerminalCondition(t *testing.T) {
	startOperator(t)
	kubeconfig, err := env.AddUserKubeconfig("cli-terminal", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	registry := releasetest.NewRegistry(t)
	missing := registry.Host() + "/ocp-release:9.9.9"
	started := time.Now()
	out, err := execute(t.Context(), NewCreateCommand, "cluster", "none", "--kubeconfig="+kubeconfig, "--name=missing", "--namespace="+env.Namespace(t),
		"--release-image="+missing, "--pull-secret="+pullSecretFile(t, `{"auths":{}}`), "--external-api-server-address=127.0.0.1", "--wait", "--timeout=2m")
	took := time.Since(started)
	if err == nil || !strings.Contains(err.Error(), "cannot become Available until its spec changes: ValidReleaseImage=False (ReleaseImageNotFound)") {
		t.Fatalf("got %v after %s\n%s", err, took, out)
	}
	if took > time.Minute {
		t.Errorf("--wait took %s to give up on a release image that does not exist", took)
	}
}
