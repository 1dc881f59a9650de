package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hypershift-le/hypershift/cmd/kubeconfig"
	"github.com/hypershift-le/hypershift/support/testutil"
	"github.com/hypershift-le/hypershift/test/testenv"
)

// hostedCluster is a hosted cluster as its user sees it: the admin
// kubeconfig `hypershift create kubeconfig` prints, and a client of it.
type hostedCluster struct {
	name       string
	kubeconfig string
	client     *kubernetes.Clientset
}

// hosted prints the admin kubeconfig of HostedCluster clusters/name with
// the CLI and returns a client of the hosted API.
func hosted(t *testing.T, name string) *hostedCluster {
	t.Helper()
	raw := execute(t, kubeconfig.NewCommand(), "--name="+name, "--namespace=clusters")
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	if err := os.WriteFile(path, []byte(raw), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig([]byte(raw))
	if err != nil {
		t.Fatalf("hypershift create kubeconfig printed a kubeconfig that does not load: %v\n%s", err, raw)
	}
	cfg.Timeout = 5 * time.Second
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &hostedCluster{name: name, kubeconfig: path, client: c}
}

// kubectl runs bin/kubectl against the hosted cluster.
func (h *hostedCluster) kubectl(t *testing.T, args ...string) string {
	t.Helper()
	root, err := testenv.RepositoryRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), filepath.Join(root, "bin", "kubectl"), append([]string{"--kubeconfig=" + h.kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// keepData writes a namespace and a ConfigMap in it with kubectl, as a
// user of the hosted cluster would.
func (h *hostedCluster) keepData(t *testing.T) {
	t.Helper()
	h.kubectl(t, "create", "namespace", "e2e")
	h.kubectl(t, "-n", "e2e", "create", "configmap", "kept", "--from-literal=answer=42")
}

// dataKept reads the ConfigMap keepData wrote.
func (h *hostedCluster) dataKept(ctx context.Context) error {
	cm, err := h.client.CoreV1().ConfigMaps("e2e").Get(ctx, "kept", metav1.GetOptions{})
	if err != nil {
		return err
	}
	if cm.Data["answer"] != "42" {
		return fmt.Errorf("the ConfigMap holds %v", cm.Data)
	}
	return nil
}

// awaitData waits until the hosted API answers with the kept data.
func (h *hostedCluster) awaitData(t *testing.T, timeout time.Duration) {
	t.Helper()
	testutil.Eventually(t, timeout, func() error { return h.dataKept(t.Context()) })
}

// prober reads the kept data every 250ms until stopped, and counts what
// failed.
type prober struct {
	mu       sync.Mutex
	ok       int
	failures []string
	failedAt []time.Time
	stop     context.CancelFunc
	done     chan struct{}
}

func (h *hostedCluster) probe(t *testing.T) *prober {
	ctx, cancel := context.WithCancel(t.Context())
	p := &prober{stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for ctx.Err() == nil {
			err := h.dataKept(ctx)
			p.mu.Lock()
			switch {
			case err == nil:
				p.ok++
			case ctx.Err() == nil:
				p.failures = append(p.failures, time.Now().Format("15:04:05.000")+" "+err.Error())
				p.failedAt = append(p.failedAt, time.Now())
			}
			p.mu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { p.stop(); <-p.done })
	return p
}

// finish stops the prober and fails the test if any request failed, or if
// too few ran to prove anything.
func (p *prober) finish(t *testing.T, what string) {
	t.Helper()
	p.stop()
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ok < 10 {
		t.Errorf("%s: only %d requests to the hosted API succeeded: the check proves nothing", what, p.ok)
	}
	if len(p.failures) > 0 {
		t.Errorf("%s: %d of %d requests to the hosted API failed: %v", what, len(p.failures), p.ok+len(p.failures), p.failures)
	}
	t.Logf("%s: the hosted API answered all %d requests", what, p.ok)
}

// componentPods returns the UIDs of the hosted control plane's pods, by
// name.
func componentPods(t *testing.T, ns string) map[string]string {
	t.Helper()
	list := &corev1.PodList{}
	if err := lc.Env.Client.List(t.Context(), list, client.InNamespace(ns), client.HasLabels{"hypershift.openshift.io/control-plane-component"}); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range list.Items {
		out[p.Name] = string(p.UID)
	}
	return out
}

// testHostedAPI: the user gets a kubeconfig from the CLI and uses the
// hosted API with kubectl. The CPO leader is killed (kill -9) and its pod
// deleted while the hosted API answers every request, and no component is
// touched; the etcd pod is deleted and the data is there once it is back.
func testHostedAPI(t *testing.T) {
	ns := controlPlaneNamespace("demo")
	h := hosted(t, "demo")
	h.keepData(t)
	// The hosted write is in the kube-apiserver's audit log, as its user
	// reads it: `kubectl logs <pod> -c audit-logs`.
	awaitHostedAuditEvent(t, ns, "create", "configmaps", "e2e", "kept", "system:admin")
	if out := h.kubectl(t, "version"); !strings.Contains(out, "Server Version: v1.37.2") {
		t.Errorf("kubectl version:\n%s", out)
	}
	before := componentPods(t, ns)

	p := h.probe(t)
	leader := holder(t, ns)
	pid, ok := lc.PodPID(t.Context(), ns, leader, "control-plane-operator")
	if !ok {
		t.Fatalf("no process for the CPO leader %s", leader)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 2*time.Minute, func() error {
		if newPID, ok := lc.PodPID(t.Context(), ns, leader, "control-plane-operator"); !ok || newPID == pid || holder(t, ns) != leader {
			return fmt.Errorf("the killed CPO is not back as the holder yet (holder %q)", holder(t, ns))
		}
		return nil
	})
	pod := &corev1.Pod{}
	if err := lc.Env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: leader}, pod); err != nil {
		t.Fatal(err)
	}
	if err := lc.Env.Client.Delete(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 2*time.Minute, func() error {
		if h := holder(t, ns); h == "" || h == leader {
			return fmt.Errorf("holder %q", h)
		}
		return nil
	})
	time.Sleep(5 * time.Second) // the new CPO's first passes
	p.finish(t, "while the CPO leader was killed and its pod replaced")
	if after := componentPods(t, ns); !sameMap(before, after) {
		t.Errorf("a new CPO changed the running components: pods before %v, after %v", before, after)
	}

	etcd0 := &corev1.Pod{}
	if err := lc.Env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "etcd-0"}, etcd0); err != nil {
		t.Fatal(err)
	}
	if err := lc.Env.Client.Delete(t.Context(), etcd0); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 2*time.Minute, func() error {
		p := &corev1.Pod{}
		if err := lc.Env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "etcd-0"}, p); err != nil {
			return err
		}
		if p.UID == etcd0.UID || !podReady(p) {
			return errors.New("etcd-0 is not back yet")
		}
		return nil
	})
	h.awaitData(t, 2*time.Minute)
	t.Log("the hosted cluster's data survived the deletion of its etcd pod")
}

func sameMap(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// claimsOf returns the PersistentVolumes behind the claims in ns, and the
// directories that hold their data.
func claimsOf(t *testing.T, ns string) map[string]string {
	t.Helper()
	claims := &corev1.PersistentVolumeClaimList{}
	if err := lc.Env.Client.List(t.Context(), claims, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	volumes := map[string]string{}
	for _, c := range claims.Items {
		pv := &corev1.PersistentVolume{}
		if err := lc.Env.Client.Get(t.Context(), client.ObjectKey{Name: c.Spec.VolumeName}, pv); err != nil {
			t.Fatalf("the volume of claim %s: %v", c.Name, err)
		}
		if pv.Spec.Local == nil {
			t.Fatalf("the volume of claim %s is not a local one of the nodes' provisioner: %+v", c.Name, pv.Spec.PersistentVolumeSource)
		}
		volumes[pv.Name] = pv.Spec.Local.Path
	}
	return volumes
}

// volumesGone waits until none of the volumes, nor their data, exists.
func volumesGone(t *testing.T, volumes map[string]string) {
	t.Helper()
	testutil.Eventually(t, 2*time.Minute, func() error {
		for name, dir := range volumes {
			err := lc.Env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &corev1.PersistentVolume{})
			if !apierrors.IsNotFound(err) {
				return fmt.Errorf("volume %s remains (%w)", name, err)
			}
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("the data of volume %s remains in %s (%w)", name, dir, err)
			}
		}
		return nil
	})
}
