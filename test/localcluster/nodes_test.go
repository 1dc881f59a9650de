package localcluster

import (
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hypershift-le/hypershift/hack/images"
	"github.com/hypershift-le/hypershift/support/testutil"
	"github.com/hypershift-le/hypershift/test/internal/pods"
	"github.com/hypershift-le/hypershift/test/nodes"
	"github.com/hypershift-le/hypershift/test/testenv"
)

// TestRealNodes starts the local cluster on two real nodes and checks what
// their pods get from it: DNS names of Services through CoreDNS and
// kube-proxy, a NodePort the host reaches at a node's address, and a
// claim provisioned on the node of its first pod whose data outlives the
// pod and goes with the claim. Stopping leaves the host as it was.
func TestRealNodes(t *testing.T) {
	lock := nodes.LockForTest(t)
	bin, err := testenv.BinaryAssetsDirectory()
	if err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	c, err := Start(t.Context(), Options{BinDir: bin, StateDir: filepath.Join(t.TempDir(), "state"), Nodes: 2, NodesLock: lock})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("two nodes, CoreDNS and the provisioners ready %s after the start", time.Since(started).Round(time.Millisecond))
	t.Cleanup(func() {
		stopping := time.Now()
		if err := c.Stop(); err != nil {
			t.Errorf("stopping: %v", err)
		}
		t.Logf("stopped in %s", time.Since(stopping).Round(time.Millisecond))
	})
	echo := pushEcho(t, c)
	ns := c.Env.Namespace(t)

	server := pods.New(ns, "server", "node-1", echo, "/usr/bin/echo", "serve", ":8080")
	server.Spec.RestartPolicy = corev1.RestartPolicyAlways
	pods.Run(t, c.Env.Client, server, corev1.PodRunning)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "echo"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Selector: map[string]string{"app": "server"},
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}},
	}
	if err := c.Env.Client.Create(t.Context(), svc); err != nil {
		t.Fatal(err)
	}

	t.Run("a pod reaches a Service by its DNS name", func(t *testing.T) {
		client := pods.Run(t, c.Env.Client, pods.New(ns, "by-name", "node-0", echo, "/usr/bin/echo", "connect", "echo."+ns+".svc:80"), corev1.PodSucceeded)
		if log := pods.Log(t, c.Env.Config, client); log != "echo from server\n" {
			t.Errorf("the client read %q, want the server's answer", log)
		}
	})
	t.Run("the host reaches a NodePort at a node's address", func(t *testing.T) {
		address := net.JoinHostPort(c.Nodes[0].Address, strconv.Itoa(int(svc.Spec.Ports[0].NodePort)))
		testutil.Eventually(t, 30*time.Second, func() error {
			conn, err := net.DialTimeout("tcp", address, 2*time.Second)
			if err != nil {
				return err
			}
			defer func() { _ = conn.Close() }()
			_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
			answer, err := io.ReadAll(conn)
			if err != nil || string(answer) != "echo from server\n" {
				return &unexpected{what: "answer", got: string(answer), err: err}
			}
			return nil
		})
	})
	t.Run("kubelets joined by bootstrap token serve with certificates of the cluster's CA", func(t *testing.T) {
		checkNodeCertificates(t, c)
		exec, port := execAndPortForward(t, c, server)
		if exec != "written by server\n" {
			t.Errorf("exec in the server pod printed %q, want its line", exec)
		}
		if port != "echo from server\n" {
			t.Errorf("a port forwarded to the server pod answered %q, want its answer", port)
		}
	})
	t.Run("a partitioned node hears nothing from the API server until healed", func(t *testing.T) {
		pod := pods.New(ns, "cut-off", "node-0", echo, "/usr/bin/echo", "serve", ":8080")
		pod.Spec.RestartPolicy = corev1.RestartPolicyAlways
		pods.Run(t, c.Env.Client, pod, corev1.PodRunning)
		pid, ok := c.PodPID(t.Context(), ns, pod.Name, pod.Spec.Containers[0].Name)
		if !ok {
			t.Fatal("no process for the pod")
		}
		heal, err := c.Partition(t.Context(), ns, pod.Name)
		if err != nil {
			t.Fatal(err)
		}
		healed := false
		defer func() {
			if !healed {
				_ = heal()
			}
		}()
		if err := c.Env.Client.Delete(t.Context(), pod, client.GracePeriodSeconds(0)); err != nil {
			t.Fatal(err)
		}
		// Without the partition the kubelet stops a deleted pod's
		// containers within a second or two.
		time.Sleep(10 * time.Second)
		if !alive(pid) {
			t.Fatal("the partitioned node's kubelet learned of the deletion: its container is gone")
		}
		if err := heal(); err != nil {
			t.Fatal(err)
		}
		healed = true
		testutil.Eventually(t, time.Minute, func() error {
			if alive(pid) {
				return &unexpected{what: "process of the deleted pod", got: "still running after the heal"}
			}
			return nil
		})
	})
	t.Run("a lost node's pods still read Running until it comes back and runs them again", func(t *testing.T) {
		pod := pods.New(ns, "on-lost-node", "node-1", echo, "/usr/bin/echo", "serve", ":8080")
		pod.Spec.RestartPolicy = corev1.RestartPolicyAlways
		pods.Run(t, c.Env.Client, pod, corev1.PodRunning)
		pid, ok := c.PodPID(t.Context(), ns, pod.Name, pod.Spec.Containers[0].Name)
		if !ok {
			t.Fatal("no process for the pod")
		}
		lost := time.Now()
		comeBack, err := c.LoseNode("node-1")
		returned := false
		t.Cleanup(func() {
			if !returned && comeBack != nil { // the next subtests need node-1
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
				defer cancel()
				if err := comeBack(ctx); err != nil {
					t.Errorf("bringing node-1 back: %v", err)
				}
			}
		})
		if err != nil { // the node is brought back by the cleanup
			t.Fatal(err)
		}
		if alive(pid) {
			t.Errorf("the pod's process %d outlived its node", pid)
		}
		time.Sleep(5 * time.Second)
		if err := c.Env.Client.Get(t.Context(), client.ObjectKeyFromObject(pod), pod); err != nil {
			t.Fatal(err)
		}
		if pod.Status.Phase != corev1.PodRunning {
			t.Errorf("the pod of the lost node is %s, want Running as the API last heard", pod.Status.Phase)
		}
		returned = true
		if err := comeBack(t.Context()); err != nil {
			t.Fatal(err)
		}
		t.Logf("node-1 Ready again %s after its loss", time.Since(lost).Round(time.Millisecond))
		testutil.Eventually(t, time.Minute, func() error {
			again, ok := c.PodPID(t.Context(), ns, pod.Name, pod.Spec.Containers[0].Name)
			if !ok || again == pid {
				return &unexpected{what: "process of the pod", got: "not started again"}
			}
			return nil
		})
		if err := c.Env.Client.Delete(t.Context(), pod); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a claim is provisioned on its pod's node and keeps its data until deleted", func(t *testing.T) {
		claim := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data"},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
		}
		if err := c.Env.Client.Create(t.Context(), claim); err != nil {
			t.Fatal(err)
		}
		writer := func(name string) *corev1.Pod {
			pod := pods.New(ns, name, "", echo, "/usr/bin/echo", "append", "/data/log")
			pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
			pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"},
			}}}
			return pods.Run(t, c.Env.Client, pod, corev1.PodSucceeded)
		}
		first := writer("first")
		if err := c.Env.Client.Get(t.Context(), client.ObjectKeyFromObject(claim), claim); err != nil {
			t.Fatal(err)
		}
		pv := &corev1.PersistentVolume{}
		if err := c.Env.Client.Get(t.Context(), client.ObjectKey{Name: claim.Spec.VolumeName}, pv); err != nil {
			t.Fatal(err)
		}
		pinned := ""
		if a := pv.Spec.NodeAffinity; a != nil && a.Required != nil && len(a.Required.NodeSelectorTerms) == 1 &&
			len(a.Required.NodeSelectorTerms[0].MatchExpressions) == 1 && len(a.Required.NodeSelectorTerms[0].MatchExpressions[0].Values) == 1 {
			pinned = a.Required.NodeSelectorTerms[0].MatchExpressions[0].Values[0]
		}
		if pv.Spec.Local == nil || pinned != first.Spec.NodeName || *claim.Spec.StorageClassName != LocalPathStorageClass {
			t.Fatalf("volume %s: %+v, class %v; want a local one on %s from %s", pv.Name, pv.Spec, claim.Spec.StorageClassName, first.Spec.NodeName, LocalPathStorageClass)
		}
		if err := c.Env.Client.Delete(t.Context(), first); err != nil {
			t.Fatal(err)
		}
		second := writer("second")
		if log := pods.Log(t, c.Env.Config, second); log != "written by first\nwritten by second\n" {
			t.Errorf("the second pod read %q, want both pods' lines", log)
		}
		if err := c.Env.Client.Delete(t.Context(), second); err != nil {
			t.Fatal(err)
		}
		if err := c.Env.Client.Delete(t.Context(), claim); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 60*time.Second, func() error {
			if err := c.Env.Client.Get(t.Context(), client.ObjectKeyFromObject(pv), &corev1.PersistentVolume{}); err == nil {
				return &unexpected{what: "volume " + pv.Name, got: "still there"}
			}
			if _, err := os.Stat(pv.Spec.Local.Path); !os.IsNotExist(err) {
				return &unexpected{what: "directory " + pv.Spec.Local.Path, got: "still there", err: err}
			}
			return nil
		})
	})
}

// alive reports whether process pid runs (a zombie does not).
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}

type unexpected struct {
	what, got string
	err       error
}

func (u *unexpected) Error() string {
	if u.err != nil {
		return u.what + ": " + u.got + ": " + u.err.Error()
	}
	return u.what + ": " + u.got
}

// pushEcho builds the test's echo program and pushes its image; it returns
// the image's pull spec.
func pushEcho(t *testing.T, c *Cluster) string {
	t.Helper()
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", dir+"/", "github.com/hypershift-le/hypershift/test/internal/echo")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := c.Registry.Push(ctx, dir, map[string]images.Spec{"echo:test": {Programs: []string{"echo"}, Entrypoint: []string{"/usr/bin/echo"}}}); err != nil {
		t.Fatal(err)
	}
	return c.Registry.Image("echo", "test")
}
