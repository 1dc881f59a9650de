package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/cmd/cluster"
	"github.com/hypershift-le/hypershift/hack/images"
	"github.com/hypershift-le/hypershift/support/testutil"
	"github.com/hypershift-le/hypershift/test/auditlog"
	"github.com/hypershift-le/hypershift/test/localcluster"
	"github.com/hypershift-le/hypershift/test/testenv"
)

// Timings the e2e install renders into every CPO (valid: 10 > 7 > 1.2*2).
const (
	leaseDuration = 10 * time.Second
	retryPeriod   = 2 * time.Second
	margin        = 10 * time.Second
)

// unsafeImage is the image of a build of the hypershift-operator that
// renders CPOs without election (nothing in the product can select it),
// pushed to the local registry by run.
var unsafeImage string

var lc *localcluster.Cluster

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctrl.SetLogger(logr.Discard())
	root, err := testenv.RepositoryRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	bin := filepath.Join(root, "bin")
	state, err := os.MkdirTemp("", "e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	lc, err = localcluster.Start(ctx, localcluster.Options{
		BinDir: bin, StateDir: state, KeepState: os.Getenv("E2E_KEEP_STATE") != "",
		// Real nodes (another package's may run first: one set at a
		// time); E2E_NODES=n for another count.
		Nodes: nodeCount(), WaitForNodes: 15 * time.Minute,
	})
	if err == nil {
		unsafeImage, err = pushUnsafeImage(ctx, bin)
	}
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: the local cluster did not start: %v\n", err)
		if lc != nil {
			_ = lc.Stop()
		}
		return 1
	}
	code := m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "local cluster state (node logs, audit log): %s\n", state)
	}
	if err := lc.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "failed to stop the local cluster: %v\n", err)
	}
	return code
}

// execute runs a CLI command in-process against the local cluster.
func execute(t *testing.T, cmd *cobra.Command, args ...string) string {
	t.Helper()
	out, err := tryExecute(t, cmd, args...)
	if err != nil {
		t.Fatalf("%s %v failed: %v\n%s", cmd.Name(), args, err, out)
	}
	return out
}

// tryExecute runs a CLI command in-process against the local cluster and
// returns its output and error.
func tryExecute(t *testing.T, cmd *cobra.Command, args ...string) (string, error) {
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(append(args, "--kubeconfig="+lc.Kubeconfig))
	cmd.SetContext(t.Context())
	cmd.SilenceUsage = true
	err := cmd.Execute()
	return out.String(), err
}

// createCluster creates a HostedCluster with the CLI, its API published on a
// NodePort of the node address the CLI picks, and waits until its admin
// kubeconfig works.
func createCluster(t *testing.T, name string, policy hyperv1.AvailabilityPolicy) {
	t.Helper()
	runCreateCluster(t, name, policy, "--wait", "--timeout=6m")
}

// createClusterNoWait creates a HostedCluster with the CLI and returns.
func createClusterNoWait(t *testing.T, name string, policy hyperv1.AvailabilityPolicy) {
	t.Helper()
	runCreateCluster(t, name, policy)
}

// runCreateCluster runs hypershift create cluster none with the stories'
// release and pull secret, and extra flags.
func runCreateCluster(t *testing.T, name string, policy hyperv1.AvailabilityPolicy, extra ...string) {
	t.Helper()
	execute(t, cluster.NewCreateCommand(), createArgs(t, name, policy, extra...)...)
}

// createArgs are the arguments of hypershift create cluster none with the
// stories' release and pull secret, then extra flags (a flag given again
// there wins).
func createArgs(t *testing.T, name string, policy hyperv1.AvailabilityPolicy, extra ...string) []string {
	return append([]string{"cluster", "none", "--name=" + name, "--namespace=clusters",
		"--release-image=" + lc.Registry.Releases[localcluster.Versions[0]], "--pull-secret=" + pullSecret(t, `{"auths":{}}`),
		"--control-plane-availability-policy=" + string(policy)}, extra...)
}

// nodeCount is E2E_NODES: how many real nodes the stories run on (3 when
// unset: losing one of them keeps a HighlyAvailable control plane's etcd
// quorum and its endpoint's node).
func nodeCount() int {
	n, err := strconv.Atoi(os.Getenv("E2E_NODES"))
	if err != nil || n < 1 {
		return 3
	}
	return n
}

// pushUnsafeImage pushes the product's image with the hypershift-operator
// of the e2eunsafe build (make localbin) and returns its pull spec.
func pushUnsafeImage(ctx context.Context, bin string) (string, error) {
	dir, err := os.MkdirTemp("", "e2e-unsafe-")
	if err != nil {
		return "", err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	for name, from := range map[string]string{
		"hypershift": filepath.Join(bin, "hypershift"), "control-plane-operator": filepath.Join(bin, "control-plane-operator"),
		"hypershift-operator": filepath.Join(bin, "e2e", "hypershift-operator-unsafe"),
	} {
		if err := os.Symlink(from, filepath.Join(dir, name)); err != nil {
			return "", err
		}
	}
	if err := lc.Registry.Push(ctx, dir, map[string]images.Spec{"hypershift-unsafe:latest": images.Product}); err != nil {
		return "", fmt.Errorf("the e2eunsafe image (make localbin builds it): %w", err)
	}
	return lc.Registry.Image("hypershift-unsafe", "latest"), nil
}

// pullSecret writes a pull secret file with content and returns its path.
func pullSecret(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pull-secret.json")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func controlPlaneNamespace(name string) string {
	return hyperv1.ControlPlaneNamespace("clusters", name)
}

// holder returns the CPO Lease's holder in ns, "" when there is none.
func holder(t *testing.T, ns string) string {
	return lc.Env.Holder(t, ns, hyperv1.ControlPlaneOperatorLeaseName)
}

// cpoPods lists the CPO pods of a control-plane namespace, running or not.
func cpoPods(t *testing.T, ns string) []corev1.Pod {
	list := &corev1.PodList{}
	if err := lc.Env.Client.List(t.Context(), list, client.InNamespace(ns), client.MatchingLabels{"app": "control-plane-operator"}); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// setRelease changes the HostedCluster's release image.
func setRelease(t *testing.T, name, image string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		hc := &hyperv1.HostedCluster{}
		if err := lc.Env.Client.Get(t.Context(), client.ObjectKey{Namespace: "clusters", Name: name}, hc); err != nil {
			return err
		}
		hc.Spec.Release.Image = image
		return lc.Env.Client.Update(t.Context(), hc)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// pinnedRelease waits until the HO has pinned HostedCluster name's
// release tag and returns the pin: the tag's repository at the digest.
func pinnedRelease(t *testing.T, name, tag string) string {
	t.Helper()
	var pinned string
	testutil.Eventually(t, time.Minute, func() error {
		hc := &hyperv1.HostedCluster{}
		if err := lc.Env.Client.Get(t.Context(), client.ObjectKey{Namespace: "clusters", Name: name}, hc); err != nil {
			return err
		}
		v := hc.Status.Version
		repository, _, _ := strings.Cut(tag[strings.LastIndex(tag, "/")+1:], ":")
		if v == nil || v.RequestedImage != tag || !strings.Contains(v.Desired.Image, "/"+repository+"@sha256:") {
			return fmt.Errorf("HostedCluster %s: status.version %+v, want %s pinned by digest", name, v, tag)
		}
		pinned = v.Desired.Image
		return nil
	})
	return pinned
}

// podRecorder remembers, for every CPO pod it ever sees, the release it
// operates on: pods are gone once an upgrade is over.
type podRecorder struct {
	// moved is the upgrade story's window in which its tag had moved.
	moved    movedTag
	mu       sync.Mutex
	releases map[string]string
	stop     context.CancelFunc
	done     chan struct{}
}

func recordPods(t *testing.T, ns string) *podRecorder {
	ctx, cancel := context.WithCancel(t.Context())
	r := &podRecorder{releases: map[string]string{}, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for ctx.Err() == nil {
			list := &corev1.PodList{}
			if err := lc.Env.Client.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{"app": "control-plane-operator"}); err == nil {
				r.mu.Lock()
				for _, p := range list.Items {
					for _, e := range p.Spec.Containers[0].Env {
						if e.Name == "OPERATE_ON_RELEASE_IMAGE" {
							r.releases[p.Name] = e.Value
						}
					}
				}
				r.mu.Unlock()
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	t.Cleanup(func() { r.stop(); <-r.done })
	return r
}

func (r *podRecorder) release(pod string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.releases[pod]
}

// cpoWrites returns every successful write the CPO ServiceAccount made in
// ns, each attributed to the pod its token is bound to.
func cpoWrites(t *testing.T, ns string) []auditlog.Write {
	t.Helper()
	user := "system:serviceaccount:" + ns + ":" + hyperv1.ControlPlaneOperatorName
	writes := auditlog.Writes(auditEvents(t), auditlog.Query{Users: []string{user}, SucceededOnly: true})
	for _, w := range writes {
		if w.Pod == "" {
			t.Fatalf("a CPO write carries no pod name: %v", w)
		}
	}
	return writes
}

func auditEvents(t *testing.T) []auditv1.Event {
	t.Helper()
	events, err := lc.Env.AuditEvents()
	if err != nil {
		t.Fatal(err)
	}
	return events
}

// podLifetimes returns, from the audit log, when each pod in ns was created
// and when it ended: reported terminated (phase Failed or Succeeded, which
// a kubelet reports once every container has stopped, and what a
// Deployment's Recreate waits for) or removed, whichever came first.
func podLifetimes(t *testing.T, ns string) (created, ended map[string]time.Time) {
	t.Helper()
	created, ended = map[string]time.Time{}, map[string]time.Time{}
	end := func(name string, at time.Time) {
		if was, ok := ended[name]; !ok || at.Before(was) {
			ended[name] = at
		}
	}
	for _, e := range auditEvents(t) {
		if e.ObjectRef == nil || e.ObjectRef.Resource != "pods" || e.ObjectRef.Namespace != ns || !auditlog.Succeeded(e) {
			continue
		}
		var pod struct {
			Metadata struct{ Name string }           `json:"metadata"`
			Status   struct{ Phase corev1.PodPhase } `json:"status"`
		}
		switch {
		case e.ObjectRef.Subresource == "status" && e.ResponseObject != nil:
			if err := json.Unmarshal(e.ResponseObject.Raw, &pod); err == nil && (pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded) {
				end(e.ObjectRef.Name, e.StageTimestamp.Time)
			}
		case e.ObjectRef.Subresource != "":
		case e.Verb == "create" && e.ResponseObject != nil:
			if err := json.Unmarshal(e.ResponseObject.Raw, &pod); err == nil && pod.Metadata.Name != "" {
				created[pod.Metadata.Name] = e.RequestReceivedTimestamp.Time
			}
		case e.Verb == "delete":
			// The last delete is the kubelet's, once the containers are gone.
			end(e.ObjectRef.Name, e.StageTimestamp.Time)
		}
	}
	return created, ended
}
