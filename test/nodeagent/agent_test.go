package nodeagent_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hypershift-le/hypershift/test/localcluster"
	"github.com/hypershift-le/hypershift/test/nodeagent"
	"github.com/hypershift-le/hypershift/test/testenv"
)

const (
	nodeName = "local-node"
	// serviceRange and podPrefix keep this package's addresses apart from
	// other local clusters that may run on the machine at the same time.
	serviceRange = "127.201.0.0/16"
)

var (
	podPrefix   = netip.MustParsePrefix("127.3.0.0/16")
	env         *testenv.Env
	agent       *nodeagent.Agent
	stopAgent   func()
	assetsDir   string
	podtoolPath string
	stateDir    string
	agentLog    = &syncLog{}
	writes      = &writeCounter{counts: map[string]int{}}
)

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

// runTests builds the test programs, starts the control plane (with the
// local cluster's controllers and a loopback Service range) and the agent,
// runs the tests and stops them all.
func runTests(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "nodeagent-test-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %v\n", err)
		return 1
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	if err := buildPrograms(tmp); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %v\n", err)
		return 1
	}
	if assetsDir, err = testenv.BinaryAssetsDirectory(); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %v\n", err)
		return 1
	}
	stateDir = filepath.Join(tmp, "state")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	env, err = testenv.Start(ctx, testenv.Options{
		ControllerManager:            true,
		ControllerManagerControllers: localcluster.Controllers,
		ServiceAccountAdmission:      true,
		ServiceClusterIPRange:        serviceRange,
	})
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: the test control plane did not start: %v\n", err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "failed to stop the test control plane: %v\n", err)
		}
	}()
	if err := startAgent(); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %v\nagent log:\n%s", err, agentLog.tail(4000))
		return 1
	}
	defer func() { stopAgent() }()
	return m.Run()
}

// startAgent starts the package's agent on stateDir, as the local cluster
// runs it: scheduling, proxying Services and provisioning claims.
func startAgent() error {
	agentConfig := rest.CopyConfig(env.Config)
	agentConfig.WrapTransport = writes.wrap
	a, err := nodeagent.New(nodeagent.Config{
		RESTConfig:       agentConfig,
		NodeName:         nodeName,
		Resolve:          resolve,
		StateDir:         stateDir,
		Log:              funcr.New(agentLog.write, funcr.Options{Verbosity: 1}),
		AddressPrefix:    podPrefix,
		ServiceProxy:     true,
		ProvisionVolumes: true,
	})
	if err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(runCtx) }()
	agent = a
	stopAgent = func() {
		stop()
		select {
		case err := <-done:
			if err != nil {
				fmt.Fprintf(os.Stderr, "the agent failed: %v\n", err)
			}
		case <-time.After(30 * time.Second):
			fmt.Fprintln(os.Stderr, "the agent did not stop within 30s")
		}
	}
	if err := waitForNodeReady(done); err != nil {
		stopAgent()
		return err
	}
	return nil
}

// buildPrograms builds podtool into dir.
func buildPrograms(dir string) error {
	root, err := testenv.RepositoryRoot()
	if err != nil {
		return err
	}
	podtoolPath = filepath.Join(dir, "podtool")
	cmd := exec.Command("go", "build", "-o", podtoolPath, "./test/nodeagent/internal/podtool")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("failed to build podtool: %w\n%s", err, out)
	}
	return nil
}

func waitForNodeReady(agentDone <-chan error) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case err := <-agentDone:
			return fmt.Errorf("the agent stopped at start: %w", err)
		default:
		}
		node := &corev1.Node{}
		err := env.Client.Get(context.Background(), client.ObjectKey{Name: nodeName}, node)
		if err == nil {
			for _, c := range node.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					return nil
				}
			}
			err = errors.New("the node is not Ready")
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %s was not Ready within 30s: %w", nodeName, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// resolve maps the tests' images to local programs: "https-server" runs
// podtool serve --tls on the pod's address and the first container port,
// logging the container's command and args; "shell"
// runs /bin/sh with the container's command after "sh" and its args;
// "podtool" runs podtool with the args; "etcd" runs the real etcd, and
// "hyperkube" the real component its command names (/usr/bin/<name>), as
// the release payload's images do. Any other image is not pulled.
func resolve(pod *corev1.Pod, c *corev1.Container, command, args []string) (string, []string, error) {
	switch c.Image {
	case "https-server":
		if len(c.Ports) == 0 {
			return "", nil, errors.New("image https-server needs a container port")
		}
		listen := net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(int(c.Ports[0].ContainerPort)))
		return podtoolPath, append(append([]string{"serve", "--tls", "--listen=" + listen, "--"}, command...), args...), nil
	case "shell":
		if len(command) == 0 || command[0] != "sh" {
			return "", nil, fmt.Errorf("image shell runs sh, not %q", command)
		}
		return "/bin/sh", append(append([]string{}, command[1:]...), args...), nil
	case "podtool":
		return podtoolPath, args, nil
	case "etcd":
		return filepath.Join(assetsDir, "etcd"), args, nil
	case "hyperkube":
		if len(command) != 1 || !strings.HasPrefix(command[0], "/usr/bin/kube-") {
			return "", nil, fmt.Errorf("image hyperkube has no program %q", command)
		}
		return filepath.Join(assetsDir, filepath.Base(command[0])), args, nil
	}
	return "", nil, fmt.Errorf("%w: no local program for image %q", nodeagent.ErrImagePull, c.Image)
}

// eventually polls check until it returns nil, and fails the test with its
// last error when timeout passes first.
func eventually(t *testing.T, timeout time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v\nagent log:\n%s", what, timeout, err, agentLog.tail(6000))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// httpsContainer serves https on port, with a readiness probe on it.
func httpsContainer(name string, port int32, args ...string) corev1.Container {
	return corev1.Container{
		Name:  name,
		Image: "https-server",
		Args:  args,
		Ports: []corev1.ContainerPort{{Name: "https", ContainerPort: port}},
		ReadinessProbe: &corev1.Probe{
			ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
				Path: "/readyz", Port: intstr.FromString("https"), Scheme: corev1.URISchemeHTTPS,
			}},
			PeriodSeconds: 1,
		},
	}
}

func shellContainer(name, script string) corev1.Container {
	return corev1.Container{Name: name, Image: "shell", Command: []string{"sh", "-c", script}}
}

// createPod creates a pod with no node and no token unless the test sets
// them, and deletes it when the test ends.
func createPod(t *testing.T, ns, name string, mutate func(*corev1.Pod), containers ...corev1.Container) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{
			Containers:                   containers,
			AutomountServiceAccountToken: ptr.To(false),
		},
	}
	if mutate != nil {
		mutate(pod)
	}
	if err := env.Client.Create(t.Context(), pod); err != nil {
		t.Fatalf("failed to create pod %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = env.Client.Delete(ctx, pod.DeepCopy())
	})
	return pod
}

func getPod(t *testing.T, ns, name string) (*corev1.Pod, error) {
	pod := &corev1.Pod{}
	err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, pod)
	return pod, err
}

// waitRunningReady waits for the pod to run with Ready=True.
func waitRunningReady(t *testing.T, ns, name string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	eventually(t, 30*time.Second, "pod "+name+" Running and Ready", func() (err error) {
		pod, err = getPod(t, ns, name)
		if err != nil {
			return err
		}
		if pod.Status.Phase != corev1.PodRunning || !conditionTrue(pod, corev1.PodReady) {
			return fmt.Errorf("phase %s, conditions %+v, containers %+v", pod.Status.Phase, pod.Status.Conditions, pod.Status.ContainerStatuses)
		}
		return nil
	})
	return pod
}

func waitGone(t *testing.T, ns, name string, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, "pod "+name+" gone", func() error {
		pod, err := getPod(t, ns, name)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("still there: deletionTimestamp %v, phase %s", pod.DeletionTimestamp, pod.Status.Phase)
	})
}

func conditionTrue(pod *corev1.Pod, t corev1.PodConditionType) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func logFile(ns, pod, container string) string {
	return readFile(filepath.Join(stateDir, "logs", fmt.Sprintf("%s_%s_%s.log", ns, pod, container)))
}

func readFile(path string) string {
	raw, _ := os.ReadFile(path)
	return string(raw)
}

// processEnv reads a running process's environment.
func processEnv(t *testing.T, pid int) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatalf("failed to read the environment of pid %d: %v", pid, err)
	}
	out := map[string]string{}
	for _, kv := range strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00") {
		name, value, _ := strings.Cut(kv, "=")
		out[name] = value
	}
	return out
}

// groupAlive reports whether a live (non-zombie) process is left in the
// process group pgid.
func groupAlive(pgid int) bool {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		end := strings.LastIndexByte(string(raw), ')')
		fields := strings.Fields(string(raw)[end+1:])
		if len(fields) >= 3 && fields[2] == strconv.Itoa(pgid) && fields[0] != "Z" && fields[0] != "X" {
			return true
		}
	}
	return false
}

// waitPID waits until the agent reports a running process for container.
func waitPID(t *testing.T, ns, name, container string) int {
	t.Helper()
	var pid int
	eventually(t, 30*time.Second, "a process for "+name+"/"+container, func() error {
		var ok bool
		if pid, ok = agent.PodPID(ns, name, container); !ok {
			return errors.New("no process")
		}
		return nil
	})
	return pid
}
