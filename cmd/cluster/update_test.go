package cluster

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/releaseinfo"
	"github.com/hypershift-le/hypershift/support/releaseinfo/releasetest"
	"github.com/hypershift-le/hypershift/support/testutil"
)

// TestUpdateRefusesBadInputLocally: what cannot work is refused before the
// kubeconfig is read (none is given here).
func TestUpdateRefusesBadInputLocally(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{name: "when nothing is to change", args: []string{"demo"}, want: "nothing to change: give --release-image, --pull-secret, --accept-release-digest or several"},
		{name: "when the accepted digest is not a digest", args: []string{"demo", "--accept-release-digest=4.17.0"}, want: "invalid --accept-release-digest \"4.17.0\": want sha256:"},
		{name: "when the pull secret is not JSON", args: []string{"demo", "--pull-secret=" + pullSecretFile(t, "user:password")}, want: "--pull-secret is not a .dockerconfigjson file"},
		{name: "when the pull secret file is missing", args: []string{"demo", "--pull-secret=/does/not/exist"}, want: "failed to read --pull-secret"},
		{name: "when no name is given", args: []string{"--release-image=quay.io/x/y:1"}, want: "a HostedCluster name is required: update cluster NAME"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := execute(t.Context(), NewUpdateCommand, append([]string{"cluster", "--kubeconfig=/does/not/exist"}, tt.args...)...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// TestFixThroughTheCLI is the story of a user who mistypes the release
// image, then gives wrong registry credentials, all through the CLI, with
// the hypershift-operator running and a stand-in control-plane-operator:
// create --wait ends at once with the reason; update --release-image with
// the wrong credentials shows them refused; update --pull-secret --wait
// fixes it and waits for the rollout; the operator copies the new
// credentials into the control-plane namespace. A change the API server
// refuses, or a pull secret the CLI did not create, writes nothing.
func TestFixThroughTheCLI(t *testing.T) {
	startOperator(t)
	kubeconfig, err := env.AddUserKubeconfig("cli-story", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	hostedKubeconfig, err := os.ReadFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	registry := releasetest.NewRegistry(t, releasetest.WithBasicAuth("user", "right"))
	good, _ := registry.PushRelease(t, "ocp-release:4.17.0", "4.17.0", map[string]string{"hypershift": registry.Host() + "/hypershift:4.17.0"})
	ns := env.Namespace(t)
	k := client.ObjectKey{Namespace: ns, Name: "story"}
	right, wrong := string(registry.DockerConfigJSON("user", "right")), string(registry.DockerConfigJSON("user", "wrong"))
	run := func(cmd string, args ...string) (string, error) {
		root := NewCreateCommand
		if cmd == "update" {
			root = NewUpdateCommand
		}
		return execute(t.Context(), root, append([]string{"cluster", "--kubeconfig=" + kubeconfig, "-n", ns}, args...)...)
	}

	started := time.Now()
	out, err := run("create", "none", "story", "--release-image="+registry.Host()+"/ocp-release:4.17.O", "--pull-secret="+pullSecretFile(t, right),
		"--external-api-server-address=127.0.0.1", "--wait", "--timeout=2m")
	if err == nil || !strings.Contains(err.Error(), "ValidReleaseImage=False (ReleaseImageNotFound)") || time.Since(started) > time.Minute {
		t.Fatalf("create --wait with a release tag that does not exist: %v after %s\n%s", err, time.Since(started), out)
	}
	t.Logf("create --wait: %v", err)

	out, err = run("update", "story", "--release-image="+good, "--pull-secret="+pullSecretFile(t, wrong))
	if err != nil || !strings.Contains(out, "Secret "+ns+"/story-pull-secret updated with the credentials of --pull-secret") || !strings.Contains(out, "release image "+good) {
		t.Fatalf("update: %v\n%s", err, out)
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		return conditionReason(t, k, hyperv1.ValidReleaseImage, hyperv1.ReleaseImageUnauthorizedReason)
	})

	type result struct {
		out string
		err error
	}
	fixed := make(chan result, 1)
	go func() {
		out, err := run("update", "story", "--pull-secret="+pullSecretFile(t, right), "--wait", "--timeout=90s")
		fixed <- result{out, err}
	}()
	standInRollout(t, hyperv1.ControlPlaneNamespace(ns, "story"))
	standInControlPlane(t, client.ObjectKey{Namespace: hyperv1.ControlPlaneNamespace(ns, "story"), Name: "story"}, hostedKubeconfig)
	res := <-fixed
	if res.err != nil || !strings.Contains(res.out, "HostedCluster "+k.String()+" runs release image "+good+" (pinned as ") || !strings.Contains(res.out, ") and is Available") {
		t.Fatalf("update --pull-secret --wait: %v\n%s", res.err, res.out)
	}
	t.Logf("update --pull-secret --wait:\n%s", res.out)
	copied := &corev1.Secret{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: hyperv1.ControlPlaneNamespace(ns, "story"), Name: hyperv1.PullSecretName}, copied); err != nil ||
		string(copied.Data[corev1.DockerConfigJsonKey]) != right {
		t.Errorf("the control-plane namespace's pull secret is not the new one: %v %q", err, copied.Data)
	}

	t.Run("a release image the API server refuses writes nothing", func(t *testing.T) {
		_, err := run("update", "story", "--release-image=Quay.io/Bad", "--pull-secret="+pullSecretFile(t, wrong))
		if err == nil || !strings.Contains(err.Error(), "the API server refused release image Quay.io/Bad for HostedCluster "+k.String()) {
			t.Fatalf("got %v", err)
		}
		assertUnchanged(t, k, good, right)
	})

	t.Run("a pull secret the CLI did not create is refused, and nothing is written", func(t *testing.T) {
		secret := &corev1.Secret{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "story-pull-secret"}, secret); err != nil {
			t.Fatal(err)
		}
		delete(secret.Labels, hyperv1.SafeToDeleteWithClusterLabel)
		if err := env.Client.Update(t.Context(), secret); err != nil {
			t.Fatal(err)
		}
		_, err := run("update", "story", "--release-image="+registry.Host()+"/ocp-release:4.18.0", "--pull-secret="+pullSecretFile(t, wrong))
		if err == nil || !strings.Contains(err.Error(), "was not created by hypershift create cluster") || !strings.Contains(err.Error(), "change it where it is managed") {
			t.Fatalf("got %v", err)
		}
		assertUnchanged(t, k, good, right)
	})

	t.Run("a cluster that does not exist is named", func(t *testing.T) {
		_, err := run("update", "nowhere", "--release-image="+good)
		if err == nil || !strings.Contains(err.Error(), "HostedCluster "+ns+"/nowhere does not exist: create it with hypershift create cluster none nowhere -n "+ns) {
			t.Fatalf("got %v", err)
		}
	})
}

// standInRollout acts as the Deployment controller, which the test's API
// server does not run, for the control-plane-operator's Deployment in ns
// until the test ends: whenever the HO writes a new template (a generation
// the status has not observed), it reports that template rolled out. A
// one-time report would race the HO, which may write the template again
// after the report (the HostedControlPlane first, the Deployment next).
func standInRollout(t *testing.T, ns string) {
	t.Helper()
	ctx := t.Context()
	go func() {
		for {
			d := &appsv1.Deployment{}
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: hyperv1.ControlPlaneOperatorName}, d); err == nil &&
				d.Status.ObservedGeneration < d.Generation {
				d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}
				_ = env.Client.Status().Update(ctx, d) // a conflict is retried on the next tick
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
}

// conditionReason returns nil once k's condition t has reason.
func conditionReason(t *testing.T, k client.ObjectKey, conditionType, reason string) error {
	hc := &hyperv1.HostedCluster{}
	if err := env.Client.Get(t.Context(), k, hc); err != nil {
		return err
	}
	if c := meta.FindStatusCondition(hc.Status.Conditions, conditionType); c == nil || c.Reason != reason || c.ObservedGeneration != hc.Generation {
		return fmt.Errorf("%s is %+v, want reason %s", conditionType, c, reason)
	}
	return nil
}

// assertUnchanged fails unless k still has release image and its pull
// secret still holds credentials.
func assertUnchanged(t *testing.T, k client.ObjectKey, image, credentials string) {
	t.Helper()
	hc := &hyperv1.HostedCluster{}
	if err := env.Client.Get(t.Context(), k, hc); err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: k.Namespace, Name: hc.Spec.PullSecret.Name}, secret); err != nil {
		t.Fatal(err)
	}
	if hc.Spec.Release.Image != image || string(secret.Data[corev1.DockerConfigJsonKey]) != credentials {
		t.Errorf("a refused update changed the cluster: release %s, credentials %q", hc.Spec.Release.Image, secret.Data[corev1.DockerConfigJsonKey])
	}
}

// TestAcceptAMovedTagThroughTheCLI: a tag re-pushed after the cluster was
// created changes nothing until update --accept-release-digest names the
// new payload; --wait then follows its rollout.
func TestAcceptAMovedTagThroughTheCLI(t *testing.T) {
	startOperator(t)
	kubeconfig, err := env.AddUserKubeconfig("cli-accept", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	hostedKubeconfig, err := os.ReadFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	registry := releasetest.NewRegistry(t)
	tag, first := registry.PushRelease(t, "ocp-release:4.17.0", "4.17.0", map[string]string{"hypershift": registry.Host() + "/hypershift:4.17.0"})
	ns := env.Namespace(t)
	k := client.ObjectKey{Namespace: ns, Name: "moved"}
	cpNamespace := hyperv1.ControlPlaneNamespace(ns, k.Name)
	run := func(root func() *cobra.Command, args ...string) (string, error) {
		return execute(t.Context(), root, append([]string{"cluster", "--kubeconfig=" + kubeconfig, "-n", ns}, args...)...)
	}
	pinnedTo := func(digest string) func() error {
		return func() error {
			hcp := &hyperv1.HostedControlPlane{}
			if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: cpNamespace, Name: k.Name}, hcp); err != nil {
				return err
			}
			if want := releaseinfo.PinnedPullSpec(tag, digest); hcp.Spec.ReleaseImage != want {
				return fmt.Errorf("HostedControlPlane releaseImage %s, want %s", hcp.Spec.ReleaseImage, want)
			}
			return nil
		}
	}

	if out, err := run(NewCreateCommand, "none", k.Name, "--release-image="+tag, "--pull-secret="+pullSecretFile(t, `{"auths":{}}`),
		"--external-api-server-address=127.0.0.1"); err != nil {
		t.Fatalf("create: %v\n%s", err, out)
	}
	testutil.Eventually(t, 30*time.Second, pinnedTo(first))

	// The same version, rebuilt: another payload under the same tag.
	_, second := registry.PushRelease(t, "ocp-release:4.17.0", "4.17.0", map[string]string{"hypershift": registry.Host() + "/hypershift:4.17.0-rebuilt"})
	if _, err := run(NewUpdateCommand, k.Name, "--release-image="+tag); err != nil {
		t.Fatal(err)
	}
	holdsFor := time.Now().Add(2 * time.Second)
	for time.Now().Before(holdsFor) {
		if err := pinnedTo(first)(); err != nil {
			t.Fatalf("before the new payload is accepted: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	done := make(chan error, 1)
	var out string
	go func() {
		var err error
		out, err = run(NewUpdateCommand, k.Name, "--accept-release-digest="+second, "--wait", "--timeout=60s")
		done <- err
	}()
	testutil.Eventually(t, 30*time.Second, pinnedTo(second))
	standInRollout(t, cpNamespace)
	standInControlPlane(t, client.ObjectKey{Namespace: cpNamespace, Name: k.Name}, hostedKubeconfig)
	if err := <-done; err != nil || !strings.Contains(out, "runs release image "+tag+" (pinned as "+releaseinfo.PinnedPullSpec(tag, second)+") and is Available") {
		t.Fatalf("update --accept-release-digest --wait: %v\n%s", err, out)
	}
}
