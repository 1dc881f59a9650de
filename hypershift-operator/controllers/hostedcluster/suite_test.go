package hostedcluster_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/controllers/hostedcluster"
	"github.com/hypershift-le/hypershift/hypershift-operator/controllers/hostedcluster/hostedclustertest"
	"github.com/hypershift-le/hypershift/hypershift-operator/controllers/nodepool"
	"github.com/hypershift-le/hypershift/support/releaseinfo"
	"github.com/hypershift-le/hypershift/support/releaseinfo/releasetest"
	"github.com/hypershift-le/hypershift/test/auditlog"
	"github.com/hypershift-le/hypershift/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Verbose() {
		ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr)))
	} else {
		ctrl.SetLogger(logr.Discard())
	}
	os.Exit(testenv.Main(m, testenv.Options{
		AuditLog: true, ControllerManager: true,
		// The real Deployment controller rolls the CPO Deployment out (its
		// pods stay Pending: there is no node), as status expects.
		ControllerManagerControllers: []string{"namespace-controller", "garbage-collector-controller", "deployment-controller", "replicaset-controller", "job-controller"},
	}, &env))
}

var operatorCount atomic.Int32

// startOperator runs the HostedCluster controller as a user of its own,
// bound to nothing but the HO's ClusterRole, until the test ends. It returns
// the user's name, for the audit log.
func startOperator(t *testing.T, mutate func(*hostedcluster.Reconciler)) string {
	t.Helper()
	user, _ := startStoppableOperator(t, mutate)
	return user
}

// startStoppableOperator is startOperator that also returns a function
// that stops the operator before the test ends.
func startStoppableOperator(t *testing.T, mutate func(*hostedcluster.Reconciler)) (string, func()) {
	t.Helper()
	user := fmt.Sprintf("hypershift-operator-%d", operatorCount.Add(1))
	cfg, err := env.AddUser(user)
	if err != nil {
		t.Fatal(err)
	}
	hostedclustertest.BindClusterRole(t, env, user)

	return user, hostedclustertest.StartOperator(t, cfg, mutate)
}

// cluster is one HostedCluster under test with its registry.
type cluster struct {
	registry *releasetest.Registry
	hc       *hyperv1.HostedCluster
	// pins maps each payload's pull spec, as pushed, to the pull spec
	// pinned to the digest it was pushed with.
	pins map[string]string
}

// newCluster pushes a release payload and creates a HostedCluster for it,
// in a namespace of its own, with its pull secret. The HostedCluster is
// torn down without the HO when the test ends, so later tests' operators
// never see it.
func newCluster(t *testing.T, version string, mutate func(*hyperv1.HostedCluster)) *cluster {
	t.Helper()
	return newClusterIn(t, env.Namespace(t), "demo", version, mutate)
}

// newClusterIn is newCluster with the HostedCluster's namespace (which
// must exist) and name chosen by the test.
func newClusterIn(t *testing.T, ns, name, version string, mutate func(*hyperv1.HostedCluster)) *cluster {
	t.Helper()
	c := &cluster{registry: releasetest.NewRegistry(t), pins: map[string]string{}}
	image := c.pushRelease(t, version)
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-pull-secret"},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: c.registry.DockerConfigJSON("user", "unused")},
	}
	if err := env.Client.Create(t.Context(), secret); err != nil {
		t.Fatal(err)
	}
	c.hc = &hyperv1.HostedCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: hyperv1.HostedClusterSpec{
			Release:    hyperv1.Release{Image: image},
			Platform:   hyperv1.PlatformSpec{Type: hyperv1.NonePlatform},
			PullSecret: hyperv1.LocalObjectReference{Name: secret.Name},
			Services:   hyperv1.NodePortServices("127.0.0.1", 0),
		},
	}
	if mutate != nil {
		mutate(c.hc)
	}
	if err := env.Client.Create(t.Context(), c.hc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { forget(c.hc) })
	return c
}

// pushRelease pushes a payload of version whose hypershift image is
// cpo:<version>, tagged <version>, and returns its pull spec.
func (c *cluster) pushRelease(t *testing.T, version string) string {
	t.Helper()
	return c.pushReleaseAs(t, version, version)
}

// pushReleaseAs pushes a payload of version tagged tag, and returns its
// pull spec; c.pin names it by the digest pushed.
func (c *cluster) pushReleaseAs(t *testing.T, tag, version string) string {
	t.Helper()
	image, digest := c.registry.PushRelease(t, "ocp-release:"+tag, version, map[string]string{
		"hypershift":     c.cpoImage(version),
		"kube-apiserver": c.registry.Host() + "/kube-apiserver:" + version,
		// Platform Pod's machine and pause images.
		nodepool.MachineImageTag: c.machineImage(version),
		nodepool.SandboxImageTag: c.registry.Host() + "/pod:" + version,
	})
	c.pins[image] = releaseinfo.PinnedPullSpec(image, digest)
	return image
}

// pin returns the pull spec the HO is to pin image to: the digest it was
// last pushed with.
func (c *cluster) pin(t *testing.T, image string) string {
	t.Helper()
	pinned, ok := c.pins[image]
	if !ok {
		t.Fatalf("no payload was pushed as %s", image)
	}
	return pinned
}

func (c *cluster) cpoImage(version string) string {
	return c.registry.Host() + "/hypershift:" + version
}

// machineImage is the machine image of the payload of version.
func (c *cluster) machineImage(version string) string {
	return c.registry.Host() + "/machine:" + version
}

// controlPlaneNamespace is the HostedCluster's control-plane namespace.
func (c *cluster) controlPlaneNamespace() string {
	return hyperv1.ControlPlaneNamespace(c.hc.Namespace, c.hc.Name)
}

// get reads the HostedCluster fresh from the API server.
func (c *cluster) get(t *testing.T) *hyperv1.HostedCluster {
	t.Helper()
	hc := &hyperv1.HostedCluster{}
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(c.hc), hc); err != nil {
		t.Fatal(err)
	}
	return hc
}

// touch sets an annotation the HO does not read to i: a pass that has
// nothing to change.
func (c *cluster) touch(t *testing.T, i int) {
	t.Helper()
	c.update(t, func(hc *hyperv1.HostedCluster) {
		if hc.Annotations == nil {
			hc.Annotations = map[string]string{}
		}
		hc.Annotations["example.com/touch"] = fmt.Sprint(i)
	})
}

// update changes the HostedCluster as a user would, retrying when the HO
// wrote it in between.
func (c *cluster) update(t *testing.T, mutate func(*hyperv1.HostedCluster)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		hc := &hyperv1.HostedCluster{}
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(c.hc), hc); err != nil {
			return err
		}
		mutate(hc)
		return env.Client.Update(t.Context(), hc)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// forget removes a HostedCluster without its operator.
func forget(hc *hyperv1.HostedCluster) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Delete first: an operator still running never adds its finalizer to
	// an object being deleted, so removing the finalizers then sticks.
	current := &hyperv1.HostedCluster{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(hc), current); err != nil {
		return
	}
	_ = env.Client.Delete(ctx, current)
	for range 10 {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(hc), current); err != nil {
			return
		}
		patch := client.MergeFromWithOptions(current.DeepCopy(), client.MergeFromWithOptimisticLock{})
		current.Finalizers = nil
		if err := env.Client.Patch(ctx, current, patch); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// writesBy returns the write requests user made, after since, that touch
// namespace or the HostedCluster's control-plane namespace.
func writesBy(t *testing.T, user string, since time.Time, namespaces ...string) []auditv1.Event {
	t.Helper()
	events, err := env.AuditEvents()
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]bool{}
	for _, ns := range namespaces {
		in[ns] = true
	}
	var out []auditv1.Event
	for _, e := range events {
		if e.User.Username != user || !auditlog.IsWrite(e) || e.RequestReceivedTimestamp.Time.Before(since) || e.ObjectRef == nil {
			continue
		}
		if len(in) > 0 && !in[e.ObjectRef.Namespace] && (e.ObjectRef.Resource != "namespaces" || !in[e.ObjectRef.Name]) {
			continue
		}
		out = append(out, e)
	}
	return out
}

func describe(events []auditv1.Event) string {
	s := ""
	for _, e := range events {
		code := int32(0)
		if e.ResponseStatus != nil {
			code = e.ResponseStatus.Code
		}
		s += fmt.Sprintf("\n  %s %s %s/%s/%s -> %d", e.RequestReceivedTimestamp.Format("15:04:05.000"), e.Verb, e.ObjectRef.Resource, e.ObjectRef.Namespace, e.ObjectRef.Name, code)
		if e.ObjectRef.Subresource != "" {
			s += " (" + e.ObjectRef.Subresource + ")"
		}
	}
	return s
}
